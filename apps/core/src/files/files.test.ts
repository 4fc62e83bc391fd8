import { createHash, randomBytes } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { UploadFileRequestSchema } from "@rms/proto";
import { describe, expect, it } from "vitest";
import { useFilesCore } from "../testutil/files.js";
import { CHUNK_BYTES } from "../storage/byte-store.js";
import { UploadStore } from "./uploads.js";

const t = useFilesCore();

type Tenant = { accountId: string; livemode: boolean };
const sha = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");
type Msg = MessageInitShape<typeof UploadFileRequestSchema>;

async function* uploadMessages(
  tenant: Tenant,
  bytes: Buffer,
  options: { filename?: string; type?: string; purpose?: string; maxBytes?: number; end?: boolean } = {},
): AsyncGenerator<Msg> {
  yield {
    part: {
      case: "start",
      value: {
        tenant,
        purpose: options.purpose ?? "resources_import",
        filename: options.filename ?? "rows.jsonl",
        type: options.type ?? "jsonl",
        maxBytes: BigInt(options.maxBytes ?? 0),
      },
    },
  };
  for (let at = 0; at < bytes.length; at += 256 * 1024) yield { part: { case: "data", value: bytes.subarray(at, at + 256 * 1024) } };
  if (options.end !== false) yield { part: { case: "end", value: { size: BigInt(bytes.length) } } };
}

async function download(tenant: Tenant, id: string, range: { start?: bigint; end?: bigint; suffix?: bigint } = {}) {
  let head: unknown;
  const pieces: Buffer[] = [];
  for await (const message of t.files.readFile({ tenant, id, ...range })) {
    if (message.part.case === "head") head = message.part.value;
    if (message.part.case === "data") pieces.push(Buffer.from(message.part.value));
  }
  return { head, bytes: Buffer.concat(pieces) };
}

describe("files over gRPC", () => {
  it("uploads a stream (sha256 on the way in), reads it back whole and by range, lists and deletes it; 404 across accounts and modes", async () => {
    const account = await t.newAccount();
    const bytes = randomBytes(3 * CHUNK_BYTES + 1234);
    const { file } = await t.files.uploadFile(uploadMessages(account.test, bytes));
    expect(file).toMatchObject({
      purpose: "resources_import",
      filename: "rows.jsonl",
      type: "jsonl",
      size: BigInt(bytes.length),
      sha256: sha(bytes),
      livemode: false,
    });
    expect(file!.expiresAt! - file!.created).toBe(7n * 24n * 3600n);
    const whole = await download(account.test, file!.id);
    expect(whole.bytes.equals(bytes)).toBe(true);
    expect(whole.head).toMatchObject({ start: 0n, end: BigInt(bytes.length) });
    const part = await download(account.test, file!.id, { start: BigInt(CHUNK_BYTES - 5), end: BigInt(CHUNK_BYTES + 5) });
    expect(part.bytes.equals(bytes.subarray(CHUNK_BYTES - 5, CHUNK_BYTES + 5))).toBe(true);
    const tail = await download(account.test, file!.id, { suffix: 10n });
    expect(tail.bytes.equals(bytes.subarray(bytes.length - 10))).toBe(true);
    await expect(download(account.test, file!.id, { start: BigInt(bytes.length) })).rejects.toMatchObject({ code: "range_not_satisfiable" });

    const other = await t.newAccount();
    await expect(t.files.getFile({ tenant: other.test, id: file!.id })).rejects.toMatchObject({ code: "resource_missing" });
    await expect(t.files.getFile({ tenant: account.live, id: file!.id })).rejects.toMatchObject({ code: "resource_missing" });
    await expect(download(account.live, file!.id)).rejects.toMatchObject({ code: "resource_missing" });
    await expect(t.files.deleteFile({ tenant: other.test, id: file!.id })).rejects.toMatchObject({ code: "resource_missing" });

    const listed = await t.files.listFiles({ tenant: account.test, purpose: "resources_import" });
    expect(listed.files.map((f) => f.id)).toEqual([file!.id]);
    expect((await t.files.listFiles({ tenant: account.test, purpose: "job_results" })).files).toEqual([]);
    expect((await t.files.deleteFile({ tenant: account.test, id: file!.id })).id).toBe(file!.id);
    await expect(t.files.getFile({ tenant: account.test, id: file!.id })).rejects.toMatchObject({ code: "resource_missing" });
    // Its bytes go at the next sweep.
    await t.store.sweep();
    expect(await t.store.bytes.chunks.countDocuments({ b: file!.id })).toBe(0);
  });

  it("past max_bytes: request_too_large and nothing kept; a stream without its end message keeps nothing", async () => {
    const account = await t.newAccount();
    await expect(t.files.uploadFile(uploadMessages(account.test, randomBytes(2 * CHUNK_BYTES), { maxBytes: CHUNK_BYTES + 1 }))).rejects.toMatchObject({
      code: "request_too_large",
    });
    await expect(t.files.uploadFile(uploadMessages(account.test, randomBytes(CHUNK_BYTES + 10), { end: false }))).rejects.toMatchObject({ grpcCode: 14 });
    expect(await t.store.files.countDocuments({ account: account.id })).toBe(0);
    expect(await t.store.bytes.blobs.countDocuments({ state: "open" })).toBe(0);
  });

  it("refuses an unknown type, a purpose clients do not upload, and an upload stream that does not begin with its start", async () => {
    const account = await t.newAccount();
    await expect(t.files.uploadFile(uploadMessages(account.test, Buffer.from("x"), { type: "xml" }))).rejects.toMatchObject({ code: "file_type_invalid" });
    await expect(t.files.uploadFile(uploadMessages(account.test, Buffer.from("x"), { purpose: "job_results" }))).rejects.toMatchObject({
      code: "parameter_invalid",
      param: "purpose",
    });
    async function* noStart(): AsyncGenerator<Msg> {
      yield { part: { case: "data", value: Buffer.from("x") } };
    }
    await expect(t.files.uploadFile(noStart())).rejects.toMatchObject({ code: "parameter_missing" });
  });

  it(
    "an Idempotency-Key repeat with the same bytes answers the first file " + "(core's key protocol); other bytes under the key are idempotency_key_reused",
    async () => {
      const account = await t.newAccount();
      const bytes = randomBytes(5000);
      const key = { metadata: { "idempotency-key": "same-upload" } };
      const first = await t.files.uploadFile(uploadMessages(account.test, bytes), key);
      const again = await t.files.uploadFile(uploadMessages(account.test, bytes), key);
      expect(again.file!.id).toBe(first.file!.id);
      await expect(t.files.uploadFile(uploadMessages(account.test, randomBytes(5000)), key)).rejects.toMatchObject({ code: "idempotency_key_reused" });
      expect(await t.store.files.countDocuments({ account: account.id })).toBe(1);
    },
  );
});

describe("uploads in parts", () => {
  async function part(tenant: Tenant, uploadId: string, bytes: Buffer) {
    async function* messages() {
      yield { part: { case: "start" as const, value: { tenant, uploadId } } };
      for (let at = 0; at < bytes.length; at += 512 * 1024) yield { part: { case: "data" as const, value: bytes.subarray(at, at + 512 * 1024) } };
      yield { part: { case: "end" as const, value: { size: BigInt(bytes.length) } } };
    }
    return (await t.files.uploadPart(messages())).part!;
  }

  it("parts in any order and at once, completed by ids in file order without a copy; the file's sha256 is the whole file's", async () => {
    const account = await t.newAccount();
    const pieces = [randomBytes(CHUNK_BYTES + 7), randomBytes(100), randomBytes(2 * CHUNK_BYTES)];
    const whole = Buffer.concat(pieces);
    const { upload } = await t.files.createUpload({
      tenant: account.test,
      purpose: "resources_import",
      filename: "big.csv",
      bytes: BigInt(whole.length),
      type: "csv",
    });
    expect(upload).toMatchObject({ status: "pending", bytes: BigInt(whole.length), filename: "big.csv" });
    expect(upload!.expiresAt - upload!.created).toBe(3600n);
    // In parallel, the last first; the second sent twice (a resend is that part again: its bytes are the part).
    const sentAt = new Date(Date.now() - 1000);
    const [p3, p1, p2, p2again] = await Promise.all([pieces[2]!, pieces[0]!, pieces[1]!, pieces[1]!].map((b) => part(account.test, upload!.id, b)));
    expect(p2again).toEqual(p2);
    const copies = await t.store.bytes.blobs.find({ _id: { $regex: /^part_/, $nin: [p1!.id, p2!.id, p3!.id] }, created: { $gte: sentAt } }).toArray();
    expect(copies).toHaveLength(1);
    expect(p1).toMatchObject({ size: BigInt(pieces[0]!.length), sha256: sha(pieces[0]!) });
    // Sizes that do not add up.
    await expect(t.files.completeUpload({ tenant: account.test, id: upload!.id, partIds: [p1!.id, p3!.id] })).rejects.toMatchObject({
      code: "upload_incomplete",
    });
    const done = await t.files.completeUpload({ tenant: account.test, id: upload!.id, partIds: [p1!.id, p2!.id, p3!.id] });
    expect(done.upload).toMatchObject({ status: "completed", file: { size: BigInt(whole.length), sha256: sha(whole), type: "csv", filename: "big.csv" } });
    // Repeated: the same answer.
    expect((await t.files.completeUpload({ tenant: account.test, id: upload!.id, partIds: [p1!.id, p2!.id, p3!.id] })).upload!.file!.id).toBe(
      done.upload!.file!.id,
    );
    const read = await download(account.test, done.upload!.file!.id, { start: BigInt(CHUNK_BYTES), end: BigInt(CHUNK_BYTES + 200) });
    expect(read.bytes.equals(whole.subarray(CHUNK_BYTES, CHUNK_BYTES + 200))).toBe(true);
    expect((await download(account.test, done.upload!.file!.id)).bytes.equals(whole)).toBe(true);
    // No byte was copied: the file's chunks are the parts'.
    const fileDoc = await t.store.files.findOne({ _id: done.upload!.file!.id });
    expect(fileDoc!.blobs.map((b) => b.id)).toEqual([p1!.id, p2!.id, p3!.id]);
    // The resend's copy of the bytes is reclaimed at the next sweep; the used parts stay with the file.
    const later = Date.now() + 2 * 3600 * 1000;
    await t.store.bytes.checkSoon([p1!.id, p2!.id, p3!.id], Date.now());
    await t.store.bytes.sweep((ids) => t.store.owners(ids, later), later, 1000);
    expect(await t.store.bytes.chunks.countDocuments({ b: copies[0]!._id })).toBe(0);
    expect(await t.store.bytes.chunks.countDocuments({ b: { $in: [p1!.id, p2!.id, p3!.id] } })).toBeGreaterThan(0);
    await expect(part(account.test, upload!.id, randomBytes(10))).rejects.toMatchObject({ code: "state_conflict" });
    await expect(t.files.getUpload({ tenant: account.live, id: upload!.id })).rejects.toMatchObject({ code: "resource_missing" });
  });

  it("cancel: parts reclaimed; an upload past its hour shows expired and takes no part", async () => {
    const account = await t.newAccount();
    const { upload } = await t.files.createUpload({ tenant: account.test, purpose: "resources_import", filename: "a.jsonl", bytes: 10n, type: "jsonl" });
    const p = await part(account.test, upload!.id, randomBytes(10));
    const canceled = await t.files.cancelUpload({ tenant: account.test, id: upload!.id });
    expect(canceled.upload!.status).toBe("canceled");
    await expect(t.files.cancelUpload({ tenant: account.test, id: upload!.id })).rejects.toMatchObject({ code: "state_conflict" });
    await t.store.sweep();
    expect(await t.store.bytes.chunks.countDocuments({ b: p.id })).toBe(0);

    const uploads = new UploadStore(t.store);
    const old = await uploads.create(
      { account: account.id, livemode: false },
      { purpose: "resources_import", filename: "b.jsonl", bytes: 5, type: "jsonl" },
      null,
      undefined,
      Date.now() - 2 * 3600 * 1000,
    );
    if ("conflict" in old) throw new Error("no key, no conflict");
    expect((await t.files.getUpload({ tenant: account.test, id: old._id })).upload!.status).toBe("expired");
    await expect(part(account.test, old._id, randomBytes(5))).rejects.toMatchObject({ code: "state_conflict" });
  });

  it("refuses bytes past 8 GiB, a part past the upload's bytes", async () => {
    const account = await t.newAccount();
    await expect(
      t.files.createUpload({ tenant: account.test, purpose: "resources_import", filename: "a.jsonl", bytes: 8n * 1024n ** 3n + 1n, type: "jsonl" }),
    ).rejects.toMatchObject({
      code: "parameter_invalid",
      param: "bytes",
    });
    const { upload } = await t.files.createUpload({ tenant: account.test, purpose: "resources_import", filename: "a.jsonl", bytes: 10n, type: "jsonl" });
    await expect(part(account.test, upload!.id, randomBytes(11))).rejects.toMatchObject({ code: "request_too_large" });
  });

  it("a part past the upload's declared bytes is 400 limit_exceeded and not kept; the same bytes sent again are the part they made", async () => {
    const account = await t.newAccount();
    const { upload } = await t.files.createUpload({ tenant: account.test, purpose: "resources_import", filename: "a.jsonl", bytes: 10n, type: "jsonl" });
    const first = await part(account.test, upload!.id, Buffer.from("0123456789"));
    for (let i = 1; i < 5; i++) {
      await expect(part(account.test, upload!.id, Buffer.from(`${i}`.repeat(10)))).rejects.toMatchObject({ code: "limit_exceeded" });
    }
    // A resend of the first part's bytes replaces it: the same part, nothing added.
    expect(await part(account.test, upload!.id, Buffer.from("0123456789"))).toEqual(first);
    expect(await t.store.parts.countDocuments({ upload: upload!.id })).toBe(1);
    const done = await t.files.completeUpload({ tenant: account.test, id: upload!.id, partIds: [first.id] });
    expect((await download(account.test, done.upload!.file!.id)).bytes.toString()).toBe("0123456789");

    // A file whose bytes repeat: the second part's bytes are the first part, named twice in the completion.
    const { upload: twice } = await t.files.createUpload({ tenant: account.test, purpose: "resources_import", filename: "c.jsonl", bytes: 20n, type: "jsonl" });
    const half = await part(account.test, twice!.id, Buffer.from("abcdefghi\n"));
    expect(await part(account.test, twice!.id, Buffer.from("abcdefghi\n"))).toEqual(half);
    const doubled = await t.files.completeUpload({ tenant: account.test, id: twice!.id, partIds: [half.id, half.id] });
    expect((await download(account.test, doubled.upload!.file!.id)).bytes.toString()).toBe("abcdefghi\nabcdefghi\n");

    // Two parts that fit alone and not together, sent at once: never both kept.
    const { upload: pair } = await t.files.createUpload({ tenant: account.test, purpose: "resources_import", filename: "b.jsonl", bytes: 10n, type: "jsonl" });
    const sent = await Promise.allSettled([part(account.test, pair!.id, randomBytes(6)), part(account.test, pair!.id, randomBytes(6))]);
    expect(sent.filter((r) => r.status === "fulfilled").length).toBeLessThanOrEqual(1);
    expect((await t.store.parts.find({ upload: pair!.id }).toArray()).reduce((sum, p) => sum + p.size, 0)).toBeLessThanOrEqual(10);
  });
});
