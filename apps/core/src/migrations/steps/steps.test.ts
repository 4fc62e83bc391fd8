import { readdirSync } from "node:fs";
import { RELEASE } from "@rms/config";
import { FileService, REQUEST_FINGERPRINT_METADATA } from "@rms/proto";
import { Binary, type Document } from "mongodb";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { ResourceStore } from "../../resources/store.js";
import { useTestCore } from "../../testutil/harness.js";
import { MIGRATIONS_COLLECTION } from "../records.js";
import { migrate } from "../run.js";
import { compareReleases } from "../step.js";
import { MIGRATION_STEPS } from "./index.js";

// A core of this release on a database of its own: it ran every step at its start (on nothing), then declared its
// indexes. Each test below writes what a 1.4.0 database may hold of one kind, runs its step again as a core's start
// would on such a database, and reads the result back through the running core.
const t = useTestCore();
const silent = pino({ level: "silent" });

async function runStep(id: string) {
  const step = MIGRATION_STEPS.find((s) => s.id === id);
  if (!step) throw new Error(`no step ${id}`);
  await t.db.collection<{ _id: string }>(MIGRATIONS_COLLECTION).deleteOne({ _id: id });
  expect((await migrate(t.db, { owner: "test", release: RELEASE, logger: silent, steps: [step] })).ran).toEqual([id]);
  return (await t.db.collection<{ _id: string }>(MIGRATIONS_COLLECTION).findOne({ _id: id }))!;
}

/** Every collection's indexes by name and key. */
async function allIndexes(): Promise<Record<string, Document[]>> {
  const names = (await t.db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name).sort();
  const out: Record<string, Document[]> = {};
  for (const name of names) {
    const indexes = (await t.db.collection(name).indexes()).map((index) => ({ name: index.name!, key: index.key }));
    out[name] = indexes.sort((a, b) => a.name.localeCompare(b.name));
  }
  return out;
}

describe("the steps folder", () => {
  it("lists one file per step, numbered in order from 0001, each named by its step's id, of this release or an earlier one", () => {
    const files = readdirSync(new URL(".", import.meta.url))
      .filter((name) => /^\d{4}-.+\.(ts|js)$/.test(name) && !name.includes(".test."))
      .map((name) => name.replace(/\.(ts|js)$/, ""));
    expect(MIGRATION_STEPS.map((step) => step.id)).toEqual(files.sort());
    expect(MIGRATION_STEPS.map((step) => Number(step.id.slice(0, 4)))).toEqual(MIGRATION_STEPS.map((_, i) => i + 1));
    for (const step of MIGRATION_STEPS) {
      expect(compareReleases(step.release, RELEASE)).toBeLessThanOrEqual(0);
      expect(["expand", "contract"]).toContain(step.kind);
      expect(step.parts.length).toBeGreaterThan(0);
    }
  });
});

describe("1.4.0-shaped data, converted, then read by this release", () => {
  it("0001: drops the indexes earlier builds left, and none of the indexes this release declares", async () => {
    // Files and tokens exist once something is stored there; the rest the start declared.
    await t.db.collection("rate_limit_tokens").createIndex({ expires_at: 1 }, { name: "expires_at", expireAfterSeconds: 0 });
    const declared = await allIndexes();
    await t.db.collection("resources").createIndex({ account: 1, livemode: 1, _id: -1 }, { name: "live_order" });
    await t.db.collection("resources").createIndex({ idempotency: 1 }, { name: "idempotency_unique", unique: true });
    await t.db.collection("files").createIndex({ idempotency: 1 }, { name: "idempotency_unique", unique: true, sparse: true });
    const unfinished = { status: { $in: ["queued", "running"] } };
    await t.db.collection("jobs").createIndex({ status: 1, _id: 1 }, { name: "unfinished_id", partialFilterExpression: unfinished });
    await t.db.collection("events").createIndex({ created: 1 }, { name: "created" });
    await t.db.collection("rate_limit_tokens").createIndex({ w: 1 }, { name: "window" });
    expect(await runStep("0001-retired-indexes")).toMatchObject({ state: "done", changed: 6 });
    expect(await allIndexes()).toEqual(declared);
  });

  it("0002: an idempotency record without expires_at gets it (first use + 24 h), so a retry two days later runs anew", async () => {
    const account = await t.newAccount();
    const created = new Date(Date.now() - 2 * 86_400_000);
    const key = `${account.id}/test/no-expiry`;
    await t.db.collection<Document>("idempotency_keys").insertOne({
      _id: key as never,
      account: account.id,
      livemode: false,
      fingerprint: "fp-old",
      created,
      owner: "old gateway",
      locked_until: new Date(created.getTime() + 30_000),
      completed: false,
      request_id: "req_old",
    });
    await runStep("0002-idempotency-records-expiry");
    // Its expiry is a day past, so a TTL monitor made fast by another file on this mongod may remove it at once.
    const record = await t.db.collection("idempotency_keys").findOne({ _id: key as never });
    if (record) expect(record["expires_at"]).toEqual(new Date(created.getTime() + 86_400_000));
    const call = { metadata: { "idempotency-key": "no-expiry", [REQUEST_FINGERPRINT_METADATA]: "fp-old" } };
    const { resource } = await t.resources.createResource({ tenant: account.test, name: "after two days" }, call);
    expect(resource!.name).toBe("after two days");
  });

  it("0003: a record holding a gateway's HTTP answer becomes a lock until it expires: a repeat is in use, another request a reuse, nothing runs", async () => {
    const account = await t.newAccount();
    const now = Date.now();
    const expiresAt = new Date(now + 20 * 3_600_000);
    const key = `${account.id}/test/http-answer`;
    await t.db.collection<Document>("idempotency_keys").insertOne({
      _id: key as never,
      account: account.id,
      livemode: false,
      fingerprint: "fp-http",
      created: new Date(now - 4 * 3_600_000),
      expires_at: expiresAt,
      owner: "old gateway",
      locked_until: new Date(now - 4 * 3_600_000 + 30_000),
      completed: true,
      request_id: "req_http",
      status: 201,
      body: new Binary(Buffer.from('{"id":"res_0000000000000000000001","object":"resource"}')),
      headers: [{ name: "Content-Type", value: "application/json" }],
    });
    expect(await runStep("0003-gateway-idempotency-answers")).toMatchObject({ changed: 1 });
    const converted = (await t.db.collection("idempotency_keys").findOne({ _id: key as never }))!;
    expect(converted).toMatchObject({ completed: false, locked_until: expiresAt, expires_at: expiresAt, fingerprint: "fp-http" });
    for (const field of ["status", "body", "headers", "answer"]) expect(converted).not.toHaveProperty(field);
    const keyed = (fingerprint: string) => ({ metadata: { "idempotency-key": "http-answer", [REQUEST_FINGERPRINT_METADATA]: fingerprint } });
    const create = (fingerprint: string) => t.resources.createResource({ tenant: account.test, name: "again" }, keyed(fingerprint));
    await expect(create("fp-http")).rejects.toMatchObject({ code: "idempotency_key_in_use" });
    await expect(create("fp-other")).rejects.toMatchObject({ code: "idempotency_key_reused" });
    expect((await t.resources.listResources({ tenant: account.test })).resources).toEqual([]);
  });

  it("0004: a TTL index declared without its partial filter is dropped, and the start declares it partial (which it could not over the old one)", async () => {
    const resources = t.db.collection("resources");
    await resources.dropIndex("expires_at_ttl");
    await resources.createIndex({ expires_at: 1 }, { expireAfterSeconds: 0, name: "expires_at_ttl" });
    const conflict = { codeName: expect.stringMatching(/IndexOptionsConflict|IndexKeySpecsConflict/) };
    await expect(new ResourceStore(t.db).ensureIndexes()).rejects.toMatchObject(conflict);
    await runStep("0004-partial-expiry-indexes");
    await new ResourceStore(t.db).ensureIndexes();
    const ttl = (await resources.indexes()).find((index) => index.name === "expires_at_ttl");
    expect(ttl).toMatchObject({ expireAfterSeconds: 0, partialFilterExpression: { expires_at: { $type: "date" } } });
  });

  it("0005: rate-limit tokens without expires_at are deleted; tokens with it stay for the TTL index", async () => {
    const tokens = t.db.collection<Document>("rate_limit_tokens");
    await tokens.insertMany([
      { _id: "key_a|100|0" as never, b: "key_a", w: 100 },
      { _id: "key_a|100|1" as never, b: "key_a", w: 100 },
      { _id: "key_b|999|0" as never, b: "key_b", w: 999, expires_at: new Date(Date.now() + 3_600_000) },
    ]);
    expect(await runStep("0005-rate-limit-tokens-expiry")).toMatchObject({ changed: 2 });
    expect(await tokens.find({}, { projection: { _id: 1 } }).toArray()).toEqual([{ _id: "key_b|999|0" }]);
  });

  it("0006: the answer a keyed create recorded on its resource goes; the resource reads the same", async () => {
    const account = await t.newAccount();
    const { resource } = await t.resources.createResource({ tenant: account.test, name: "with an answer", metadata: [{ key: "a", value: "1" }] });
    const answer = { fingerprint: "fp", request_id: "req_1", headers: "[]", shown: { name: "with an answer" } };
    await t.db.collection("resources").updateOne({ _id: resource!.id as never }, { $set: { answer } });
    await runStep("0006-create-answers-in-documents");
    expect(await t.db.collection("resources").findOne({ _id: resource!.id as never })).not.toHaveProperty("answer");
    expect((await t.resources.getResource({ tenant: account.test, id: resource!.id })).resource).toEqual(resource);
  });

  it("0007: a resource without the name fields search reads is found by a name search once converted, with the fields a write makes", async () => {
    const account = await t.newAccount();
    const { resource } = await t.resources.createResource({ tenant: account.test, name: "Zebra Crossing" });
    const stored = (await t.db.collection("resources").findOne({ _id: resource!.id as never }))!;
    await t.db.collection("resources").updateOne({ _id: resource!.id as never }, { $unset: { name_lower: "", name_prefixes: "" } });
    const search = async () => (await t.resources.searchResources({ tenant: account.test, query: "name~'zebra'" })).resources.map((r) => r.id);
    expect(await search()).toEqual([]);
    await runStep("0007-resource-name-fields");
    expect(await search()).toEqual([resource!.id]);
    const converted = await t.db.collection("resources").findOne({ _id: resource!.id as never });
    expect(converted).toMatchObject({ name_lower: stored["name_lower"], name_prefixes: stored["name_prefixes"] });
  });

  it("0008: a file or an upload named without its type's extension gets it; the file reads so, and an upload completes into a file so named", async () => {
    const account = await t.newAccount();
    const files = t.client(FileService);
    async function* rows(filename: string) {
      yield { part: { case: "start" as const, value: { tenant: account.test, purpose: "resources_import", filename, type: "csv", maxBytes: 0n } } };
      yield { part: { case: "data" as const, value: Buffer.from("name\nx\n") } };
      yield { part: { case: "end" as const, value: { size: 7n } } };
    }
    const kept = (await files.uploadFile(rows("kept.CSV"))).file!;
    const renamed = (await files.uploadFile(rows("report.html"))).file!;
    const { upload } = await files.createUpload({ tenant: account.test, purpose: "resources_import", filename: "page.html", bytes: 7n, type: "csv" });
    // As 1.4.0 stored them: the names as sent.
    await t.db.collection("files").updateOne({ _id: renamed.id as never }, { $set: { filename: "report.html" } });
    await t.db.collection("uploads").updateOne({ _id: upload!.id as never }, { $set: { filename: "page.html" } });
    const record = await runStep("0008-file-names-by-type");
    expect(record).toMatchObject({ state: "done", changed: 2 });
    expect((await files.getFile({ tenant: account.test, id: renamed.id })).file!.filename).toBe("report.html.csv");
    expect((await files.getFile({ tenant: account.test, id: kept.id })).file!.filename).toBe("kept.CSV");
    expect((await files.getUpload({ tenant: account.test, id: upload!.id })).upload!.filename).toBe("page.html.csv");
    async function* part() {
      yield { part: { case: "start" as const, value: { tenant: account.test, uploadId: upload!.id } } };
      yield { part: { case: "data" as const, value: Buffer.from("name\nx\n") } };
      yield { part: { case: "end" as const, value: { size: 7n } } };
    }
    const { part: sent } = await files.uploadPart(part());
    const done = await files.completeUpload({ tenant: account.test, id: upload!.id, partIds: [sent!.id] });
    expect(done.upload!.file!.filename).toBe("page.html.csv");
  });
});
