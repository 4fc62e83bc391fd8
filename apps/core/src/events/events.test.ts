import { eventually } from "@rms/test-db/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestCore, type TestCore } from "../testutil/harness.js";

let t: TestCore;
beforeAll(async () => {
  t = await startTestCore({ relay: true });
});
afterAll(() => t?.stop());

describe("EventService over the relay", () => {
  it("shows one event per change of a resource, newest first, with sequence, previous_attributes and the deleted object as it was", async () => {
    const { test } = await t.newAccount();
    const { resource } = await t.resources.createResource(
      { tenant: test, name: "first", metadata: [{ key: "a", value: "1" }] },
      { metadata: { "rms-request-id": "req_create" } },
    );
    const id = resource!.id;
    await t.resources.updateResource({ tenant: test, id, name: "second" });
    await t.resources.deleteResource({ tenant: test, id });

    const { events } = await eventually(async () => {
      const page = await t.events.listEvents({ tenant: test });
      expect(page.events).toHaveLength(3);
      return page;
    });
    expect(events.map((e) => e.type)).toEqual(["resource.deleted", "resource.updated", "resource.created"]);
    expect(events.map((e) => Number(e.sequence))).toEqual([2, 1, 0]);
    const [deleted, updated, created] = events.map((e) => JSON.parse(e.dataJson));
    expect(created).toEqual({ object: { id, object: "resource", name: "first", status: "active", metadata: { a: "1" }, created: Number(resource!.created) } });
    expect(events[2]!.requestId).toBe("req_create");
    expect(updated.previous_attributes).toEqual({ name: "first" });
    expect(updated.object.name).toBe("second");
    expect(deleted.object).toMatchObject({ id, name: "second", metadata: { a: "1" } });
    expect(events.every((e) => e.pendingWebhooks === 0 && e.livemode === false)).toBe(true);

    const { event } = await t.events.getEvent({ tenant: test, id: events[1]!.id });
    expect(event!.type).toBe("resource.updated");
  });

  it("filters by exact type, prefix, types and created; pages by cursor; keeps tenants and modes apart", async () => {
    const { test, live } = await t.newAccount();
    const { resource } = await t.resources.createResource({ tenant: test, name: "one" });
    await t.resources.updateResource({ tenant: test, id: resource!.id, name: "two" });
    await t.resources.createResource({ tenant: test, name: "three" });
    const all = await eventually(async () => {
      const page = await t.events.listEvents({ tenant: test });
      expect(page.events).toHaveLength(3);
      return page.events;
    });
    expect((await t.events.listEvents({ tenant: test, type: "resource.created" })).events).toHaveLength(2);
    expect((await t.events.listEvents({ tenant: test, type: "resource.*" })).events).toHaveLength(3);
    expect((await t.events.listEvents({ tenant: test, type: "res*" })).events).toHaveLength(3);
    expect((await t.events.listEvents({ tenant: test, type: "job.*" })).events).toHaveLength(0);
    expect((await t.events.listEvents({ tenant: test, types: ["resource.updated", "job.failed"] })).events.map((e) => e.type)).toEqual(["resource.updated"]);
    const newest = Number(all[0]!.created);
    expect((await t.events.listEvents({ tenant: test, created: { gt: BigInt(newest) } })).events).toHaveLength(0);
    expect((await t.events.listEvents({ tenant: test, created: { lte: BigInt(newest) } })).events).toHaveLength(3);

    const first = await t.events.listEvents({ tenant: test, limit: 2 });
    expect(first.hasMore).toBe(true);
    const second = await t.events.listEvents({ tenant: test, limit: 2, startingAfter: first.events[1]!.id });
    expect([...first.events, ...second.events].map((e) => e.id)).toEqual(all.map((e) => e.id));
    const back = await t.events.listEvents({ tenant: test, limit: 2, endingBefore: all[2]!.id });
    expect(back.events.map((e) => e.id)).toEqual(all.slice(0, 2).map((e) => e.id));

    expect((await t.events.listEvents({ tenant: live })).events).toHaveLength(0);
    const other = await t.newAccount();
    await expect(t.events.getEvent({ tenant: other.test, id: all[0]!.id })).rejects.toMatchObject({ code: "resource_missing", param: "id" });
  });

  it("refuses type with types, more than 20 types and a malformed cursor", async () => {
    const { test } = await t.newAccount();
    await expect(t.events.listEvents({ tenant: test, type: "resource.created", types: ["resource.updated"] })).rejects.toMatchObject({
      code: "parameter_invalid",
      param: "types",
    });
    await expect(t.events.listEvents({ tenant: test, types: Array.from({ length: 21 }, (_, i) => `t${i}`) })).rejects.toMatchObject({
      code: "parameter_invalid",
      param: "types",
    });
    await expect(t.events.listEvents({ tenant: test, startingAfter: "res_x" })).rejects.toMatchObject({ code: "parameter_invalid", param: "starting_after" });
  });

  it("lists one object's events by sequence, newest change first, with sequence bounds and cursors of that object; refuses what no index serves", async () => {
    const { test, live } = await t.newAccount();
    const { resource } = await t.resources.createResource({ tenant: test, name: "v0" });
    const id = resource!.id;
    for (let i = 1; i <= 5; i++) await t.resources.updateResource({ tenant: test, id, name: `v${i}` });
    const { resource: other } = await t.resources.createResource({ tenant: test, name: "other" });
    const sequences = (events: { sequence: bigint }[]) => events.map((e) => Number(e.sequence));
    const all = await eventually(async () => {
      const page = await t.events.listEvents({ tenant: test, object: id });
      expect(sequences(page.events)).toEqual([5, 4, 3, 2, 1, 0]);
      return page.events;
    });
    expect(all.every((e) => JSON.parse(e.dataJson).object.id === id)).toBe(true);

    // Gap repair: applied 2, received 5: exactly 3 and 4 (and 5 itself) are the ones after 2.
    expect(sequences((await t.events.listEvents({ tenant: test, object: id, sequence: { gt: 2n } })).events)).toEqual([5, 4, 3]);
    expect(sequences((await t.events.listEvents({ tenant: test, object: id, sequence: { gt: 2n, lt: 5n } })).events)).toEqual([4, 3]);
    expect(sequences((await t.events.listEvents({ tenant: test, object: id, sequence: { gte: 1n, lte: 1n } })).events)).toEqual([1]);

    // Cursors are events of that object; pages walk the sequence either way.
    const first = await t.events.listEvents({ tenant: test, object: id, limit: 2 });
    expect([sequences(first.events), first.hasMore]).toEqual([[5, 4], true]);
    const next = await t.events.listEvents({ tenant: test, object: id, limit: 2, startingAfter: first.events[1]!.id, sequence: { gte: 1n } });
    expect([sequences(next.events), next.hasMore]).toEqual([[3, 2], true]);
    const back = await t.events.listEvents({ tenant: test, object: id, limit: 2, endingBefore: next.events[0]!.id });
    expect([sequences(back.events), back.hasMore]).toEqual([[5, 4], false]);
    const [otherEvent] = (
      await eventually(async () => {
        const page = await t.events.listEvents({ tenant: test, object: other!.id });
        expect(page.events).toHaveLength(1);
        return page;
      })
    ).events;
    await expect(t.events.listEvents({ tenant: test, object: id, startingAfter: otherEvent!.id })).rejects.toMatchObject({
      code: "parameter_invalid",
      param: "starting_after",
    });

    // Another mode, or an id nothing has, lists nothing.
    expect((await t.events.listEvents({ tenant: live, object: id })).events).toEqual([]);
    expect((await t.events.listEvents({ tenant: test, object: "job_0000000000000000000000" })).events).toEqual([]);

    await expect(t.events.listEvents({ tenant: test, sequence: { gt: 2n } })).rejects.toMatchObject({ code: "parameter_missing", param: "object" });
    await expect(t.events.listEvents({ tenant: test, object: "res_nope" })).rejects.toMatchObject({ code: "parameter_invalid", param: "object" });
    await expect(t.events.listEvents({ tenant: test, object: id, type: "resource.updated" })).rejects.toMatchObject({
      code: "parameter_invalid",
      param: "type",
    });
    await expect(t.events.listEvents({ tenant: test, object: id, types: ["resource.updated"] })).rejects.toMatchObject({ param: "types" });
    await expect(t.events.listEvents({ tenant: test, object: id, created: { gte: 1n } })).rejects.toMatchObject({ param: "created" });
    await expect(t.events.listEvents({ tenant: test, object: id, deliverySuccess: true })).rejects.toMatchObject({ param: "delivery_success" });
  });

  it("stops a page at 2 MiB counting each update's previous_attributes too: a page of large updates stays below gRPC's 4 MiB", async () => {
    const { test } = await t.newAccount();
    const metadata = (round: number) => Array.from({ length: 50 }, (_, k) => ({ key: `key${k}`, value: `${round}-`.padEnd(500, "x") }));
    const { resource } = await t.resources.createResource({ tenant: test, name: "big", metadata: metadata(0) });
    for (let round = 1; round <= 80; round++) await t.resources.updateResource({ tenant: test, id: resource!.id, metadata: metadata(round) });
    await eventually(async () => expect((await t.events.listEvents({ tenant: test, object: resource!.id, limit: 1 })).events[0]?.sequence).toBe(80n), {
      timeoutMs: 30_000,
    });
    const page = await t.events.listEvents({ tenant: test, limit: 100 });
    expect(page.hasMore).toBe(true);
    expect(page.events.length).toBeLessThan(81);
    const bytes = page.events.reduce((sum, e) => sum + e.dataJson.length, 0);
    expect(bytes).toBeLessThanOrEqual(3 * 1024 * 1024);
    process.stderr.write(`a page of large updates: ${page.events.length} events, ${bytes} bytes of data\n`);
  }, 120_000);
});
