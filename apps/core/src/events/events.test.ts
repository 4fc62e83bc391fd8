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
    const { resource } = await t.resources.createResource({ tenant: test, name: "first", metadata: [{ key: "a", value: "1" }] }, { metadata: { "rms-request-id": "req_create" } });
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
    await expect(t.events.listEvents({ tenant: test, type: "resource.created", types: ["resource.updated"] })).rejects.toMatchObject({ code: "parameter_invalid", param: "types" });
    await expect(t.events.listEvents({ tenant: test, types: Array.from({ length: 21 }, (_, i) => `t${i}`) })).rejects.toMatchObject({ code: "parameter_invalid", param: "types" });
    await expect(t.events.listEvents({ tenant: test, startingAfter: "res_x" })).rejects.toMatchObject({ code: "parameter_invalid", param: "starting_after" });
  });
});
