import { status as GrpcStatus } from "@grpc/grpc-js";
import { ResourceStatus } from "@rms/proto";

type Tenant = { accountId: string; livemode: boolean };
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestCore, type TestCore } from "../testutil/harness.js";
import type { ResourceDocument } from "./model.js";

let t: TestCore;
let tenant: Tenant;
beforeAll(async () => {
  t = await startTestCore();
  tenant = (await t.newAccount()).test;
});
afterAll(() => t.stop());

const storedDoc = (id: string) => t.db.collection<ResourceDocument>("resources").findOne({ _id: id });
const metadataOf = (r: { metadata: { key: string; value: string }[] } | undefined) => r?.metadata.map((m) => [m.key, m.value]);

describe("CreateResource", () => {
  it("creates an active resource by default, with id, created and empty metadata", async () => {
    const before = Math.floor(Date.now() / 1000);
    const { resource } = await t.resources.createResource({ tenant, name: "first" });
    expect(resource?.id).toMatch(/^res_[0-9A-Za-z]{22}$/);
    expect(resource?.status).toBe(ResourceStatus.ACTIVE);
    expect(resource?.metadata).toEqual([]);
    expect(Number(resource?.created)).toBeGreaterThanOrEqual(before);
  });

  it("takes a supplied status and stores hostile metadata keys verbatim", async () => {
    const metadata = ["$where", "a.b", "__proto__", "constructor", "$set"].map((key, i) => ({ key, value: String(i) }));
    const { resource } = await t.resources.createResource({ tenant, name: "x", status: ResourceStatus.ARCHIVED, metadata });
    expect(resource?.status).toBe(ResourceStatus.ARCHIVED);
    const fetched = await t.resources.getResource({ tenant, id: resource!.id });
    expect(metadataOf(fetched.resource)).toEqual(metadata.map((m) => [m.key, m.value]));
  });

  it.each([
    ["empty name", { name: "" }, "parameter_invalid_empty", "name"],
    ["201 code points", { name: "é".repeat(201) }, "string_too_long", "name"],
    ["unknown status", { name: "a", status: 9 as ResourceStatus }, "parameter_invalid", "status"],
    ["51 metadata keys", { name: "a", metadata: Array.from({ length: 51 }, (_, i) => ({ key: `k${i}`, value: "v" })) }, "metadata_invalid", "metadata"],
  ])("refuses %s with INVALID_ARGUMENT and writes nothing", async (_label, fields, code, param) => {
    const before = await t.db.collection("resources").countDocuments();
    await expect(t.resources.createResource({ tenant, ...fields })).rejects.toMatchObject({ grpcCode: GrpcStatus.INVALID_ARGUMENT, code, param });
    expect(await t.db.collection("resources").countDocuments()).toBe(before);
  });

  it("records its resource.created event in the same document", async () => {
    const { resource } = await t.resources.createResource({ tenant, name: "evented" }, { metadata: { "rms-request-id": "req_abc" } });
    const doc = await storedDoc(resource!.id);
    expect(doc?.pending_events).toHaveLength(1);
    expect(doc?.pending_events[0]).toMatchObject({ type: "resource.created", object: { id: resource!.id, name: "evented" }, request: { id: "req_abc" } });
    expect(doc?.pending_events[0]?._id).toMatch(/^evt_/);
  });
});

describe("GetResource", () => {
  it("finds nothing across accounts or modes (404, never 403)", async () => {
    const { resource } = await t.resources.createResource({ tenant, name: "mine" });
    const other = await t.newAccount();
    for (const foreign of [other.test, other.live, { ...tenant, livemode: true }]) {
      await expect(t.resources.getResource({ tenant: foreign, id: resource!.id })).rejects.toMatchObject({
        grpcCode: GrpcStatus.NOT_FOUND,
        code: "resource_missing",
        param: "id",
      });
    }
  });

  it("treats malformed ids as not found", async () => {
    await expect(t.resources.getResource({ tenant, id: "res_nope" })).rejects.toMatchObject({ code: "resource_missing" });
    await expect(t.resources.getResource({ tenant, id: "" })).rejects.toMatchObject({ code: "resource_missing" });
  });

  it("requires a tenant", async () => {
    await expect(t.resources.getResource({ id: "res_x" })).rejects.toMatchObject({ code: "parameter_missing" });
  });
});

describe("UpdateResource", () => {
  it("changes only the fields given and merges metadata", async () => {
    const { resource } = await t.resources.createResource({
      tenant,
      name: "u",
      metadata: [
        { key: "a", value: "1" },
        { key: "b", value: "2" },
      ],
    });
    const { resource: updated } = await t.resources.updateResource({
      tenant,
      id: resource!.id,
      status: ResourceStatus.PAUSED,
      metadata: [
        { key: "a", value: "" },
        { key: "c", value: "3" },
      ],
    });
    expect(updated?.name).toBe("u");
    expect(updated?.status).toBe(ResourceStatus.PAUSED);
    expect(metadataOf(updated)).toEqual([
      ["b", "2"],
      ["c", "3"],
    ]);
    expect(updated?.created).toBe(resource?.created);
  });

  it("clears all metadata when asked, then applies the merge", async () => {
    const { resource } = await t.resources.createResource({ tenant, name: "c", metadata: [{ key: "a", value: "1" }] });
    const { resource: cleared } = await t.resources.updateResource({ tenant, id: resource!.id, clearMetadata: true });
    expect(cleared?.metadata).toEqual([]);
  });

  it("allows every status transition", async () => {
    const { resource } = await t.resources.createResource({ tenant, name: "s" });
    for (const status of [
      ResourceStatus.ARCHIVED,
      ResourceStatus.ACTIVE,
      ResourceStatus.PAUSED,
      ResourceStatus.ARCHIVED,
      ResourceStatus.PAUSED,
      ResourceStatus.ACTIVE,
    ]) {
      const { resource: updated } = await t.resources.updateResource({ tenant, id: resource!.id, status });
      expect(updated?.status).toBe(status);
    }
  });

  it("records one resource.updated event with only the old values of changed fields", async () => {
    const { resource } = await t.resources.createResource({ tenant, name: "before", metadata: [{ key: "k", value: "v" }] });
    await t.resources.updateResource({ tenant, id: resource!.id, name: "after", status: ResourceStatus.ACTIVE });
    const doc = await storedDoc(resource!.id);
    expect(doc?.pending_events.map((e) => e.type)).toEqual(["resource.created", "resource.updated"]);
    expect(doc?.pending_events[1]?.previous_attributes).toEqual({ name: "before" });
  });

  it("writes nothing and records no event for an empty or no-op update", async () => {
    const { resource } = await t.resources.createResource({ tenant, name: "same" });
    const { resource: same } = await t.resources.updateResource({ tenant, id: resource!.id });
    expect(same).toEqual(resource);
    await t.resources.updateResource({ tenant, id: resource!.id, name: "same", status: ResourceStatus.ACTIVE });
    expect((await storedDoc(resource!.id))?.pending_events).toHaveLength(1);
  });

  it("applies the 50-key limit to the merged result and writes nothing when it fails", async () => {
    const fifty = Array.from({ length: 50 }, (_, i) => ({ key: `k${i}`, value: "v" }));
    const { resource } = await t.resources.createResource({ tenant, name: "full", metadata: fifty });
    await expect(t.resources.updateResource({ tenant, id: resource!.id, metadata: [{ key: "one_more", value: "v" }] })).rejects.toMatchObject({
      code: "metadata_invalid",
    });
    expect((await storedDoc(resource!.id))?.version).toBe(0);
  });

  it("keeps every change of concurrent updates (no lost update)", async () => {
    const { resource } = await t.resources.createResource({ tenant, name: "race" });
    await Promise.all(Array.from({ length: 10 }, (_, i) => t.resources.updateResource({ tenant, id: resource!.id, metadata: [{ key: `k${i}`, value: "v" }] })));
    const { resource: final } = await t.resources.getResource({ tenant, id: resource!.id });
    expect(final?.metadata).toHaveLength(10);
    expect((await storedDoc(resource!.id))?.pending_events).toHaveLength(11);
  });

  it("is 404 for another tenant's resource", async () => {
    const { resource } = await t.resources.createResource({ tenant, name: "mine" });
    await expect(t.resources.updateResource({ tenant: { ...tenant, livemode: true }, id: resource!.id, name: "theirs" })).rejects.toMatchObject({
      code: "resource_missing",
    });
  });
});

describe("DeleteResource", () => {
  it("deletes permanently: later get, update and delete are 404", async () => {
    const { resource } = await t.resources.createResource({ tenant, name: "gone" });
    expect(await t.resources.deleteResource({ tenant, id: resource!.id })).toMatchObject({ id: resource!.id });
    await expect(t.resources.getResource({ tenant, id: resource!.id })).rejects.toMatchObject({ code: "resource_missing" });
    await expect(t.resources.updateResource({ tenant, id: resource!.id, name: "again" })).rejects.toMatchObject({ code: "resource_missing" });
    await expect(t.resources.deleteResource({ tenant, id: resource!.id })).rejects.toMatchObject({ code: "resource_missing" });
  });

  it("leaves a tombstone carrying the resource.deleted event with the resource as it was", async () => {
    const { resource } = await t.resources.createResource({ tenant, name: "tomb" });
    await t.resources.deleteResource({ tenant, id: resource!.id });
    const doc = await storedDoc(resource!.id);
    expect(doc?.deleted).toBe(true);
    expect(doc?.pending_events.at(-1)).toMatchObject({ type: "resource.deleted", object: { id: resource!.id, name: "tomb", status: "active" } });
  });
});

describe("ListResources", () => {
  let mine: Tenant;
  let ids: string[];
  beforeAll(async () => {
    mine = (await t.newAccount()).test;
    ids = [];
    for (let i = 0; i < 7; i++) {
      const status = i % 2 === 0 ? ResourceStatus.ACTIVE : ResourceStatus.PAUSED;
      ids.unshift((await t.resources.createResource({ tenant: mine, name: `r${i}`, status })).resource!.id);
    }
  });

  it("returns newest first with the default limit", async () => {
    const page = await t.resources.listResources({ tenant: mine });
    expect(page.resources.map((r) => r.id)).toEqual(ids);
    expect(page.hasMore).toBe(false);
  });

  it("pages with starting_after and ending_before", async () => {
    const first = await t.resources.listResources({ tenant: mine, limit: 3 });
    expect(first.resources.map((r) => r.id)).toEqual(ids.slice(0, 3));
    expect(first.hasMore).toBe(true);
    const second = await t.resources.listResources({ tenant: mine, limit: 3, startingAfter: ids[2]! });
    expect(second.resources.map((r) => r.id)).toEqual(ids.slice(3, 6));
    const last = await t.resources.listResources({ tenant: mine, limit: 3, startingAfter: ids[5]! });
    expect(last.resources.map((r) => r.id)).toEqual(ids.slice(6));
    expect(last.hasMore).toBe(false);
    const back = await t.resources.listResources({ tenant: mine, limit: 2, endingBefore: ids[4]! });
    expect(back.resources.map((r) => r.id)).toEqual(ids.slice(2, 4));
    expect(back.hasMore).toBe(true);
  });

  it("filters by status", async () => {
    const paused = await t.resources.listResources({ tenant: mine, filter: { status: [ResourceStatus.PAUSED] } });
    expect(paused.resources.map((r) => r.id)).toEqual(ids.filter((_, i) => i % 2 === 1));
  });

  it("keeps a deleted resource's id usable as a cursor", async () => {
    const scratch = (await t.newAccount()).test;
    const made: string[] = [];
    for (let i = 0; i < 4; i++) made.unshift((await t.resources.createResource({ tenant: scratch, name: `d${i}` })).resource!.id);
    await t.resources.deleteResource({ tenant: scratch, id: made[1]! });
    const after = await t.resources.listResources({ tenant: scratch, startingAfter: made[1]! });
    expect(after.resources.map((r) => r.id)).toEqual(made.slice(2));
    const before = await t.resources.listResources({ tenant: scratch, endingBefore: made[1]! });
    expect(before.resources.map((r) => r.id)).toEqual(made.slice(0, 1));
  });

  it("answers the page as the public objects' JSON text with as_json, the same page in the same order", async () => {
    const metadata = [
      { key: "__proto__", value: "kept" },
      { key: "2", value: "b" },
      { key: "a", value: 'é"' },
    ];
    const scratch = (await t.newAccount()).test;
    const made = (await t.resources.createResource({ tenant: scratch, name: "json", status: ResourceStatus.PAUSED, metadata })).resource!;
    const page = await t.resources.listResources({ tenant: scratch, asJson: true });
    expect(page.resources).toEqual([]);
    expect(page.hasMore).toBe(false);
    // Byte for byte what the gateway rendered from the message (gateway schema/objects.test.ts has the same text).
    expect(page.dataJson).toBe(
      `[{"id":"${made.id}","object":"resource","name":"json","status":"paused","metadata":{"2":"b","__proto__":"kept","a":"é\\""},"created":${made.created}}]`,
    );
    const found = await t.resources.searchResources({ tenant: scratch, query: "status:'paused'", asJson: true });
    expect(found).toMatchObject({ resources: [], hasMore: false, nextPage: "", dataJson: page.dataJson });
    const pages = await t.resources.listResources({ tenant: mine, limit: 3, asJson: true });
    expect((JSON.parse(pages.dataJson) as { id: string }[]).map((r) => r.id)).toEqual(ids.slice(0, 3));
    expect(pages.hasMore).toBe(true);
    const empty = await t.resources.listResources({ tenant: { ...mine, livemode: true }, asJson: true });
    expect(empty.dataJson).toBe("[]");
    // Without it, the messages as before.
    expect((await t.resources.listResources({ tenant: scratch })).dataJson).toBe("");
  });

  it("never shows another tenant's resources", async () => {
    const page = await t.resources.listResources({ tenant: { ...mine, livemode: true } });
    expect(page.resources).toEqual([]);
  });

  it.each([
    [{ limit: 101 }, "limit_invalid", "limit"],
    [{ limit: -1 }, "limit_invalid", "limit"],
    [{ startingAfter: "res_bad" }, "parameter_invalid", "starting_after"],
    [{ endingBefore: "acct_0VbmcTa0dnRox8QNLmcF1D" }, "parameter_invalid", "ending_before"],
    [{ startingAfter: "res_0VbmcTa0dnRox8QNLmcF1D", endingBefore: "res_0VbmcTa0dnRox8QNLmcF1D" }, "parameter_invalid", "ending_before"],
  ])("refuses %o", async (query, code, param) => {
    await expect(t.resources.listResources({ tenant: mine, ...query })).rejects.toMatchObject({ grpcCode: GrpcStatus.INVALID_ARGUMENT, code, param });
  });

  it("accepts the limit bounds 1 and 100", async () => {
    expect((await t.resources.listResources({ tenant: mine, limit: 1 })).resources).toHaveLength(1);
    expect((await t.resources.listResources({ tenant: mine, limit: 100 })).resources).toHaveLength(7);
  });
});

describe("idempotent create (idempotency-key metadata)", () => {
  it("makes one resource for many concurrent creates with one key: each other one gets it back, or in-flight while the first runs", async () => {
    const scratch = (await t.newAccount()).test;
    const create = () =>
      t.resources.createResource({ tenant: scratch, name: "once", metadata: [{ key: "a", value: "1" }] }, { metadata: { "idempotency-key": "k-1" } });
    const results = await Promise.allSettled(Array.from({ length: 20 }, create));
    const made = results.flatMap((r) => (r.status === "fulfilled" ? [r.value.resource!.id] : []));
    for (const r of results) if (r.status === "rejected") expect(r.reason).toMatchObject({ code: "idempotency_key_in_use", grpcCode: GrpcStatus.ABORTED });
    expect(made.length).toBeGreaterThan(0);
    expect(new Set(made).size).toBe(1);
    // Once the first has answered, a repeat gets its resource.
    expect((await create()).resource!.id).toBe(made[0]);
    expect((await t.resources.listResources({ tenant: scratch })).resources).toHaveLength(1);
  });

  it("scopes keys to account and mode", async () => {
    const other = await t.newAccount();
    const a = await t.resources.createResource({ tenant: other.test, name: "n" }, { metadata: { "idempotency-key": "shared" } });
    const b = await t.resources.createResource({ tenant: other.live, name: "n" }, { metadata: { "idempotency-key": "shared" } });
    expect(a.resource!.id).not.toBe(b.resource!.id);
  });

  it("refuses the same key with different parameters, and writes nothing", async () => {
    const scratch = (await t.newAccount()).test;
    await t.resources.createResource({ tenant: scratch, name: "first" }, { metadata: { "idempotency-key": "k-2" } });
    await expect(t.resources.createResource({ tenant: scratch, name: "second" }, { metadata: { "idempotency-key": "k-2" } })).rejects.toMatchObject({
      grpcCode: GrpcStatus.INVALID_ARGUMENT,
      type: "idempotency_error",
      code: "idempotency_key_reused",
    });
    expect((await t.resources.listResources({ tenant: scratch })).resources.map((r) => r.name)).toEqual(["first"]);
  });
});

describe("idempotency keys expire after 24 hours", () => {
  it("lets a key be used for a new resource once its first use is older than 24 hours", async () => {
    const scratch = (await t.newAccount()).test;
    const first = await t.resources.createResource({ tenant: scratch, name: "day one" }, { metadata: { "idempotency-key": "daily" } });
    // Age the first use by 25 hours, as if a day had passed: the key's record and the resource it made.
    await t.db.collection<ResourceDocument>("resources").updateOne({ _id: first.resource!.id }, { $inc: { created: -25 * 3600 } });
    const dayAgo = new Date(Date.now() - 25 * 3600 * 1000);
    await t.db
      .collection<{ _id: string }>("idempotency_keys")
      .updateOne({ _id: `${scratch.accountId}/test/daily` }, { $set: { created: dayAgo, expires_at: dayAgo } });
    const second = await t.resources.createResource({ tenant: scratch, name: "day two" }, { metadata: { "idempotency-key": "daily" } });
    expect(second.resource!.id).not.toBe(first.resource!.id);
    expect(second.resource!.name).toBe("day two");
    const again = await t.resources.createResource({ tenant: scratch, name: "day two" }, { metadata: { "idempotency-key": "daily" } });
    expect(again.resource!.id).toBe(second.resource!.id);
  });
});

describe("one record per key, whatever the operation (grpc/idempotent.ts)", () => {
  it("two different operations sent under one key at the same instant: exactly one executes, the other is refused", async () => {
    const scratch = (await t.newAccount()).test;
    const { resource } = await t.resources.createResource({ tenant: scratch, name: "target" });
    const rounds = 20;
    for (let i = 0; i < rounds; i++) {
      const metadata = { "idempotency-key": `both-${i}` };
      // A create and an update of another resource, the same key, sent together (the gap docs/decisions.md had).
      const [created, updated] = await Promise.allSettled([
        t.resources.createResource({ tenant: scratch, name: `made ${i}` }, { metadata }),
        t.resources.updateResource({ tenant: scratch, id: resource!.id, name: `renamed ${i}` }, { metadata }),
      ]);
      const refused = [created, updated].filter((r) => r.status === "rejected");
      expect(refused, `round ${i}`).toHaveLength(1);
      // The loser meets the winner's record: still running (409) or done with another request (400).
      expect(["idempotency_key_in_use", "idempotency_key_reused"]).toContain((refused[0] as PromiseRejectedResult).reason.code);
    }
    const { resources } = await t.resources.listResources({ tenant: scratch, limit: 100 });
    const made = resources.filter((r) => r.name.startsWith("made ")).length;
    const target = await storedDoc(resource!.id);
    // Every round did one thing: the creates that won made a resource, the updates that won moved the version.
    expect(made + target!.version).toBe(rounds);
  });

  it("replays a refusal from executing under the key (a 404), marked with the first request's id", async () => {
    const scratch = (await t.newAccount()).test;
    const call = (requestId: string) =>
      t.resources.updateResource(
        { tenant: scratch, id: "res_00000000000000000000000", name: "n" },
        { metadata: { "idempotency-key": "gone", "rms-request-id": requestId } },
      );
    await expect(call("req_first")).rejects.toMatchObject({ code: "resource_missing" });
    let trailer: string | undefined;
    await expect(
      t.resources.updateResource(
        { tenant: scratch, id: "res_00000000000000000000000", name: "n" },
        {
          metadata: { "idempotency-key": "gone", "rms-request-id": "req_second" },
          onTrailers: (m) => {
            trailer = m.get("rms-replay")[0] as string;
          },
        },
      ),
    ).rejects.toMatchObject({ code: "resource_missing" });
    expect(JSON.parse(trailer!)).toMatchObject({ requestId: "req_first" });
  });
});
