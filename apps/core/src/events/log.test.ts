import type { WatchEventsResponse } from "@rms/proto";
import { eventually } from "@rms/test-db/testkit";
import { BSON } from "mongodb";
import { describe, expect, it } from "vitest";
import { useTestCore } from "../testutil/harness.js";

// A stream's two reads of core (docs/streams.md): ReadEventLog (a tenant's events by position, what a stream
// catches up with) and WatchEvents (every tenant's events as they commit, the gateway's one feed).

const t = useTestCore({ relay: true });

const positions = (events: { position: bigint }[]) => events.map((e) => Number(e.position));

/** Reads a watch in the background: its messages so far, and `stop()` to cancel it. */
function watching(resumeToken: Uint8Array<ArrayBuffer> = new Uint8Array()) {
  const abort = new AbortController();
  const messages: WatchEventsResponse[] = [];
  const done = (async () => {
    for await (const message of t.events.watchEvents({ resumeToken }, { signal: abort.signal })) messages.push(message);
  })().catch((error: unknown) => error);
  return {
    messages,
    /** Resolves when the watch ends: with its error, if it failed. */
    done,
    events: () => messages.flatMap((m) => m.events),
    async stop() {
      abort.abort();
      return done;
    },
  };
}

describe("ReadEventLog", () => {
  it("reads a tenant's events by position after a position or an event, filtered, with its head; refuses an event of another tenant", async () => {
    const { test, live } = await t.newAccount();
    expect(await t.events.readEventLog({ tenant: test })).toMatchObject({ events: [], through: 0n, head: 0n });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await t.resources.createResource({ tenant: test, name: `r${i}` })).resource!.id);
    await t.resources.updateResource({ tenant: test, id: ids[0]!, name: "renamed" });
    await t.resources.createResource({ tenant: live, name: "other mode" });
    const all = await eventually(async () => {
      const read = await t.events.readEventLog({ tenant: test, after: { case: "afterPosition", value: 0n } });
      expect(read.head).toBe(5n);
      return read;
    });
    expect(positions(all.events)).toEqual([1, 2, 3, 4, 5]);
    expect(all.through).toBe(5n);
    // Positions follow the order the relay's copies committed, not the order of the requests: an object's own events
    // keep their order (one outbox), other objects' may come between.
    expect(all.events.map((e) => e.event!.type).sort()).toEqual([
      "resource.created",
      "resource.created",
      "resource.created",
      "resource.created",
      "resource.updated",
    ]);
    const updatedAt = all.events.findIndex((e) => e.event!.type === "resource.updated") + 1;
    expect(all.events[updatedAt - 1]!.objectId).toBe(ids[0]);

    // After an event, a page of 2 (through says where the next starts), filters by type and object.
    const after = await t.events.readEventLog({ tenant: test, after: { case: "afterEvent", value: all.events[1]!.event!.id }, limit: 2 });
    expect([positions(after.events), after.through, after.head]).toEqual([[3, 4], 4n, 5n]);
    const rest = await t.events.readEventLog({ tenant: test, after: { case: "afterPosition", value: after.through }, limit: 2 });
    expect([positions(rest.events), rest.through]).toEqual([[5], 5n]);
    const updated = await t.events.readEventLog({ tenant: test, after: { case: "afterPosition", value: 0n }, types: ["resource.updated"] });
    expect([positions(updated.events), updated.through]).toEqual([[updatedAt], 5n]);
    const prefix = await t.events.readEventLog({ tenant: test, after: { case: "afterPosition", value: 0n }, types: ["job.*"] });
    expect([positions(prefix.events), prefix.through]).toEqual([[], 5n]);
    const ofObject = await t.events.readEventLog({ tenant: test, after: { case: "afterPosition", value: 0n }, object: ids[0]! });
    expect(ofObject.events.map((e) => e.event!.type)).toEqual(["resource.created", "resource.updated"]);
    expect(ofObject.events.map((e) => e.event!.sequence)).toEqual([0n, 1n]);

    // The other mode has its own positions; its events are no cursor here.
    const other = await eventually(async () => {
      const read = await t.events.readEventLog({ tenant: live, after: { case: "afterPosition", value: 0n } });
      expect(positions(read.events)).toEqual([1]);
      return read.events[0]!.event!.id;
    });
    await expect(t.events.readEventLog({ tenant: test, after: { case: "afterEvent", value: other } })).rejects.toMatchObject({
      code: "parameter_invalid",
      param: "starting_after",
    });
    await expect(t.events.readEventLog({ tenant: test, after: { case: "afterEvent", value: "evt_0000000000000000000000" } })).rejects.toMatchObject({
      code: "parameter_invalid",
      param: "starting_after",
    });
    await expect(t.events.readEventLog({ tenant: test, after: { case: "afterEvent", value: "res_1" } })).rejects.toMatchObject({ param: "starting_after" });
    await expect(t.events.readEventLog({ tenant: test, limit: 501 })).rejects.toMatchObject({ code: "limit_invalid" });
    await expect(t.events.readEventLog({ tenant: test, object: "nope" })).rejects.toMatchObject({ code: "parameter_invalid", param: "object" });
  });
});

describe("WatchEvents", () => {
  it("starts with a token and the time it starts at, then gives every tenant's events as they commit, each tenant's positions in order", async () => {
    const a = await t.newAccount();
    const b = await t.newAccount();
    const watch = watching();
    await eventually(() => expect(watch.messages.length).toBeGreaterThan(0));
    const [start] = watch.messages;
    expect(start!.events).toEqual([]);
    expect(start!.clusterTime).toBeGreaterThan(0n);
    expect(start!.resumeToken.length).toBeGreaterThan(0);
    for (let i = 0; i < 5; i++) {
      await t.resources.createResource({ tenant: a.test, name: `a${i}` });
      await t.resources.createResource({ tenant: b.live, name: `b${i}` });
    }
    const mine = () => watch.events().filter((e) => e.accountId === a.id || e.accountId === b.id);
    await eventually(() => expect(mine()).toHaveLength(10));
    expect(
      positions(
        mine()
          .filter((e) => e.accountId === a.id)
          .map((e) => e.positioned!),
      ),
    ).toEqual([1, 2, 3, 4, 5]);
    expect(
      mine()
        .filter((e) => e.accountId === b.id)
        .every((e) => e.positioned!.event!.livemode),
    ).toBe(true);
    // Each event message says up to when it covers; a read after that time sees its event.
    const last = watch.messages.filter((m) => m.events.some((e) => e.accountId === a.id)).at(-1)!;
    expect(last.clusterTime).toBeGreaterThan(start!.clusterTime);
    const read = await t.events.readEventLog({ tenant: a.test, after: { case: "afterPosition", value: 4n }, afterClusterTime: last.clusterTime });
    expect(positions(read.events)).toEqual([5]);
    await watch.stop();
  });

  it("resumes from a message's token: the events made while no one watched come, none twice", async () => {
    const { test, id } = await t.newAccount();
    const first = watching();
    await t.resources.createResource({ tenant: test, name: "before" });
    await eventually(() => expect(first.events().filter((e) => e.accountId === id)).toHaveLength(1));
    const token = new Uint8Array(first.messages.findLast((m) => m.events.some((e) => e.accountId === id))!.resumeToken);
    await first.stop();
    for (let i = 0; i < 3; i++) await t.resources.createResource({ tenant: test, name: `away${i}` });
    const second = watching(token);
    await t.resources.createResource({ tenant: test, name: "after" });
    await eventually(() => expect(second.events().filter((e) => e.accountId === id)).toHaveLength(4));
    expect(
      positions(
        second
          .events()
          .filter((e) => e.accountId === id)
          .map((e) => e.positioned!),
      ),
    ).toEqual([2, 3, 4, 5]);
    await second.stop();
  });

  it("answers a token the database cannot resume from with resume_token_lost", async () => {
    const bogus = new Uint8Array(BSON.serialize({ _data: "8263B1A5C0000000012B022C0100296E5A1004" }));
    const watch = watching(bogus);
    expect(await watch.done).toMatchObject({ code: "resume_token_lost" });
  });
});
