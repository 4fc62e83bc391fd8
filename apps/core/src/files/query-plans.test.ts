import { Binary } from "mongodb";
import { describe, expect, it } from "vitest";
import type { Tenant } from "../caller.js";
import { newId } from "../ids.js";
import { expectExact, expectPoint, usePlanCopies } from "../testutil/query-plans.js";
import {
  BLOB_PREFIX,
  FILES_COLLECTION,
  UPLOAD_PARTS_COLLECTION,
  UPLOADS_COLLECTION,
  type FileDocument,
  type PartDocument,
  type UploadDocument,
} from "./model.js";
import { FileStore } from "./store.js";
import { UploadStore } from "./uploads.js";

/**
 * Every query shape of the files domain and its byte store (docs/database.md, "Every query has an index"): each
 * runs through the real store on one copy of a data set and is explained on an untouched copy; a collection scan
 * fails the explain. The data: a measured tenant and three others (both modes) with files of every purpose, their
 * blobs and chunks, and uploads with parts.
 */

const NOW = Date.now();
const DAY = 86_400_000;
const M: Tenant = { account: newId("acct", NOW - 90 * DAY), livemode: false };
const TENANTS: Tenant[] = [
  M,
  { ...M, livemode: true },
  ...[1, 2, 3].flatMap((n) => [false, true].map((livemode) => ({ account: newId("acct", NOW - (90 - n) * DAY), livemode }))),
];
const PURPOSES = ["resources_import", "resources_export", "job_results"] as const;

const mFiles: FileDocument[] = [];
const mUploads: UploadDocument[] = [];
const mParts: PartDocument[] = [];

function seed() {
  const files: FileDocument[] = [];
  const blobs: Record<string, unknown>[] = [];
  const chunks: Record<string, unknown>[] = [];
  const uploads: UploadDocument[] = [];
  const parts: PartDocument[] = [];
  for (const tenant of TENANTS) {
    for (let i = 0; i < 300; i++) {
      const createdMs = NOW - (300 - i) * 60_000;
      const id = newId("file", createdMs);
      const file: FileDocument = {
        _id: id,
        account: tenant.account,
        livemode: tenant.livemode,
        purpose: PURPOSES[i % 3]!,
        filename: `f${i}.jsonl`,
        type: "jsonl",
        size: 32,
        sha256: "0".repeat(64),
        created: Math.floor(createdMs / 1000),
        blobs: [{ id, size: 32 }],
        retain_until: new Date(createdMs + 7 * DAY),
        held_by: [],
        expires_at: new Date(createdMs + 7 * DAY),
      };
      files.push(file);
      if (tenant === M) mFiles.push(file);
      blobs.push({ _id: id, state: "sealed", created: new Date(createdMs), check_at: new Date(createdMs + 7 * DAY), size: 32, sha256: file.sha256, chunks: 2 });
      for (let n = 0; n < 2; n++) chunks.push({ _id: `${id}/${n}`, b: id, n, o: n * 16, data: new Binary(Buffer.alloc(16, n)) });
    }
    for (let u = 0; u < 20; u++) {
      const createdMs = NOW - (20 - u) * 60_000;
      const upload: UploadDocument = {
        _id: newId("upl", createdMs),
        account: tenant.account,
        livemode: tenant.livemode,
        purpose: "resources_import",
        filename: `u${u}.csv`,
        type: "csv",
        bytes: 5 * 16,
        status: "pending",
        created: Math.floor(createdMs / 1000),
        expires: Math.floor(createdMs / 1000) + 3600,
        file: null,
        expires_at: new Date(createdMs + 25 * 3600 * 1000),
        idempotency: `upl-${tenant.account}-${tenant.livemode}-${u}`,
      };
      uploads.push(upload);
      if (tenant === M) mUploads.push(upload);
      for (let p = 0; p < 5; p++) {
        const part: PartDocument = {
          _id: newId("part", createdMs + p),
          upload: upload._id,
          account: tenant.account,
          livemode: tenant.livemode,
          size: 16,
          sha256: "1".repeat(64),
          created: Math.floor(createdMs / 1000),
          expires_at: new Date(upload.expires * 1000),
        };
        parts.push(part);
        if (tenant === M) mParts.push(part);
        blobs.push({ _id: part._id, state: "sealed", created: new Date(createdMs), check_at: new Date(NOW - 1000), size: 16, sha256: part.sha256, chunks: 1 });
        chunks.push({ _id: `${part._id}/0`, b: part._id, n: 0, o: 0, data: new Binary(Buffer.alloc(16, p)) });
      }
    }
  }
  return {
    [FILES_COLLECTION]: files,
    [`${BLOB_PREFIX}s`]: blobs,
    [`${BLOB_PREFIX}_chunks`]: chunks,
    [UPLOADS_COLLECTION]: uploads,
    [UPLOAD_PARTS_COLLECTION]: parts,
  };
}

/** The data set, made once so both copies hold the same documents. */
const data = seed();

const { work, pristine, measure } = usePlanCopies("files_plans", {
  async prepare(db) {
    await new FileStore(db).ensureIndexes();
    for (const [name, docs] of Object.entries(data)) await db.collection(name).insertMany(docs.map((d) => ({ ...d })) as never[]);
  },
  report: (table) => console.log(`\nFiles query plans\n${table}\n`),
});

describe("files", () => {
  it("list: a page with and without purpose and created bounds, from a cursor either way; no in-memory sort", async () => {
    const store = new FileStore(work);
    const cursor = mFiles[150]!._id;
    const created = { gte: mFiles[100]!.created, lt: mFiles[200]!.created };
    for (const [label, query] of [
      ["list", { limit: 20 }],
      ["list by purpose", { limit: 20, purpose: "job_results" as const }],
      ["list after a cursor", { limit: 20, startingAfter: cursor }],
      ["list before a cursor, by purpose", { limit: 20, endingBefore: cursor, purpose: "resources_import" as const }],
      ["list created range", { limit: 20, created }],
    ] as const) {
      for (const plan of (await measure(label, () => store.list(M, query))).plans) {
        expect(plan.stages, plan.shape).not.toContain("SORT");
        expect(plan.totalDocsExamined, plan.shape).toBeLessThanOrEqual(2 * 21 + 10);
      }
    }
  });

  it("retrieve, delete, hold and release by id; the idempotent announce's lookup", async () => {
    const store = new FileStore(work);
    const file = mFiles[10]!;
    for (const plan of (await measure("retrieve", () => store.find(M, file._id))).plans) expectPoint(plan);
    for (const plan of (await measure("hold", () => store.hold(M, file._id, newId("job")))).plans) expectPoint(plan);
    for (const plan of (await measure("release", () => store.release(M, file._id, newId("job")))).plans) expectPoint(plan);
    for (const plan of (await measure("delete", () => store.delete(M, mFiles[11]!._id))).plans) expect(plan.totalDocsExamined).toBeLessThanOrEqual(2);
    const lookup = () => store.files.findOne({ _id: file._id });
    for (const plan of (await measure("announce's repeat lookup", lookup)).plans) expectExact(plan);
  });

  it("the sweep: blobs due, their owners (files by blob, parts by id), reclaiming one (chunks by blob)", async () => {
    const store = new FileStore(work);
    for (const plan of (await measure("sweep pass", () => store.sweep(NOW))).plans) expectExact(plan, 110);
    const ids = [...mFiles.slice(0, 50).map((f) => f._id), ...mParts.slice(0, 50).map((p) => p._id)];
    for (const plan of (await measure("owners", () => store.owners(ids, NOW))).plans) expectExact(plan);
    for (const plan of (await measure("discard", () => store.bytes.discard(mFiles[12]!._id))).plans) expectExact(plan);
  });

  it("reads: a range from the middle of a blob (the chunk at an offset, then the rest by offset); seal by index", async () => {
    const store = new FileStore(work);
    const file = mFiles[20]!;
    const read = async () => {
      for await (const _ of store.read(file, 20, 32)) void _;
    };
    for (const plan of (await measure("read from an offset", read)).plans) expectExact(plan);
    await store.bytes.blobs.updateOne({ _id: mFiles[21]!._id }, { $set: { state: "open" } });
    await pristine.collection(`${BLOB_PREFIX}s`).updateOne({ _id: mFiles[21]!._id as never }, { $set: { state: "open" } });
    for (const plan of (await measure("seal", () => store.bytes.seal(mFiles[21]!._id))).plans) expectExact(plan);
  });
});

describe("usage", () => {
  it("the tenant's sum of live files and of pending parts, read from index keys only; the completed uploads among them by id", async () => {
    const store = new FileStore(work);
    const { value, plans } = await measure("usage", () => store.usage(M, NOW));
    const live = { account: M.account, livemode: M.livemode, expires_at: { $gt: new Date(NOW) } };
    const sizes = async (docs: Promise<{ size: number }[]>) => (await docs).reduce((sum, d) => sum + d.size, 0);
    // Held files (no expiry) count too.
    const files = { ...live, expires_at: { $not: { $lte: new Date(NOW) } } };
    expect(value.used).toBe((await sizes(store.files.find(files).toArray())) + (await sizes(store.parts.find(live).toArray())));
    for (const plan of plans) {
      expect(plan.stages, plan.shape).not.toContain("COLLSCAN");
      // Covered: the sizes come from the index, no document is read.
      if (plan.operation === "aggregate") expect(plan.totalDocsExamined, plan.shape).toBe(0);
      else expectExact(plan);
    }
  });

  it("a part's sum of its upload's parts, and its content's lookup", async () => {
    const store = new FileStore(work);
    const uploads = new UploadStore(store);
    const upload = mUploads[6]!;
    const received = () => (uploads as unknown as { receivedBytes(id: string): Promise<number> }).receivedBytes(upload._id);
    // The upload's parts are read (5 here): a part is checked against the parts of its own upload only.
    for (const plan of (await measure("an upload's parts' bytes", received)).plans) expect(plan.totalDocsExamined, plan.shape).toBeLessThanOrEqual(5);
    for (const plan of (await measure("a part by content", () => store.parts.findOne({ content: `${upload._id}/x/1` }))).plans) expectPoint(plan);
  });
});

describe("uploads", () => {
  it("retrieve, complete's parts by upload and ids, cancel's parts", async () => {
    const store = new FileStore(work);
    const uploads = new UploadStore(store);
    const upload = mUploads[3]!;
    for (const plan of (await measure("upload retrieve", () => uploads.get(M, upload._id))).plans) expectPoint(plan);
    const partIds = mParts.filter((p) => p.upload === upload._id).map((p) => p._id);
    for (const plan of (await measure("complete", () => uploads.complete(M, upload._id, partIds, NOW))).plans) expectExact(plan, 5);
    for (const plan of (await measure("cancel", () => uploads.cancel(M, mUploads[4]!._id, NOW))).plans) expectExact(plan, 5);
  });
});
