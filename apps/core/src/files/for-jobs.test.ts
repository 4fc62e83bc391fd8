import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { newId } from "../ids.js";
import { newTenant, thingsCollection } from "../testutil/storage.js";
import { JobFiles } from "./for-jobs.js";
import { FILE_RETENTION_MS } from "./model.js";

let t: Awaited<ReturnType<typeof thingsCollection>>;
let files: JobFiles;
beforeAll(async () => {
  t = await thingsCollection();
  files = new JobFiles(t.db);
  await files.ensureIndexes();
});
afterAll(() => t.close());

const sha = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");
async function collect(stream: AsyncIterable<Buffer>): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const piece of stream) out.push(piece);
  return Buffer.concat(out);
}

it("an inline import's items: a file held by its job from the start, its id derived from the job (a repeat finds it), read from an offset", async () => {
  const tenant = newTenant();
  const job = newId("job");
  const bytes = Buffer.from('{"name":"a"}\n{"name":"b"}\n');
  const file = await files.createImportFile(tenant, bytes, "jsonl", { job });
  expect(file).toMatchObject({ purpose: "resources_import", type: "jsonl", size: bytes.length, sha256: sha(bytes), expires_at: null });
  expect((await files.createImportFile(tenant, bytes, "jsonl", { job })).id).toBe(file.id);
  expect(await files.importFile(tenant, file.id)).toEqual({ id: file.id, type: "jsonl", size: bytes.length, sha256: sha(bytes) });
  expect((await collect(await files.readFrom(tenant, file.id, 13))).toString()).toBe('{"name":"b"}\n');
  // Held: no expiry, DELETE refused; released: expires at its retention.
  await expect(files.store.delete(tenant, file.id)).rejects.toMatchObject({ code: "state_conflict" });
  await files.release(tenant, file.id, job);
  const released = await files.store.get(tenant, file.id);
  expect(released.expires_at?.getTime()).toBe(released.retain_until.getTime());
  expect(released.held_by).toEqual([]);
});

it("another tenant's or mode's file is missing; a file of another purpose is not an import", async () => {
  const tenant = newTenant();
  const file = await files.createImportFile(tenant, Buffer.from("name\nx\n"), "csv");
  await expect(files.importFile(newTenant(), file.id)).rejects.toMatchObject({ code: "resource_missing", param: "params[file]" });
  await expect(files.importFile({ ...tenant, livemode: true }, file.id)).rejects.toMatchObject({ code: "resource_missing" });
  await expect(files.hold(newTenant(), file.id, newId("job"))).rejects.toMatchObject({ code: "resource_missing" });
  const job = newId("job");
  const out = files.output(tenant, job, "job_results", "jsonl");
  await out.writeChunk(0, Buffer.from("{}\n"));
  const made = await out.finish();
  await expect(files.importFile(tenant, made.id)).rejects.toMatchObject({ code: "parameter_invalid" });
});

it("hold keeps a file past its retention; release after it lets it expire at once", async () => {
  const tenant = newTenant();
  const file = await files.createImportFile(tenant, Buffer.from("name\nx\n"), "csv");
  const job = newId("job");
  await files.hold(tenant, file.id, job);
  await files.hold(tenant, file.id, job);
  expect((await files.store.get(tenant, file.id)).expires_at).toBeUndefined();
  const late = Date.now() + FILE_RETENTION_MS + 1000;
  await files.release(tenant, file.id, job, late);
  expect((await files.store.files.findOne({ _id: file.id }))?.expires_at?.getTime()).toBe(late);
  expect(await files.store.find(tenant, file.id, late + 1)).toBeNull();
  // An expired file's bytes go at the sweep after its time (it owns them no longer).
  await files.store.bytes.checkSoon([file.id], late);
  await files.store.sweep(late + 1);
  expect(await files.store.bytes.chunks.countDocuments({ b: file.id })).toBe(0);
});

it("a job's output: chunks by index (a takeover rewrites), finish is idempotent and streams once, discard leaves nothing", async () => {
  const tenant = newTenant();
  const job = newId("job");
  const out = files.output(tenant, job, "resources_export", "csv");
  expect(out.fileId).toBe(files.outputFileId(job, "resources_export"));
  const rows = [Buffer.from("id,name\n"), Buffer.from("res_1,a\n"), Buffer.from("res_2,b\n")];
  await out.writeChunk(0, rows[0]!);
  await out.writeChunk(1, Buffer.from("res_1,partial")); // the dead worker's
  const again = files.output(tenant, job, "resources_export", "csv");
  await again.writeChunk(1, rows[1]!);
  await again.writeChunk(2, rows[2]!);
  const whole = Buffer.concat(rows);
  const finishedAt = Date.now() - 60_000;
  const finished = await again.finish(finishedAt);
  expect(finished).toMatchObject({ id: out.fileId, purpose: "resources_export", size: whole.length, sha256: sha(whole) });
  expect(finished.expires_at).toBe(Math.floor((finishedAt + FILE_RETENTION_MS) / 1000));
  expect(await out.finish()).toEqual(finished);
  const doc = await files.store.get(tenant, out.fileId);
  expect((await collect(files.store.read(doc))).equals(whole)).toBe(true);

  const canceled = files.output(tenant, newId("job"), "job_results", "jsonl");
  await canceled.writeChunk(0, randomBytes(10));
  await canceled.discard();
  expect(await files.store.find(tenant, canceled.fileId)).toBeNull();
  expect(await files.store.bytes.chunks.countDocuments({ b: canceled.fileId })).toBe(0);
});
