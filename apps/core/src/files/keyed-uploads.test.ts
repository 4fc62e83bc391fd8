import { randomBytes } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Metadata } from "@grpc/grpc-js";
import { REPLAY_METADATA, type UploadFileRequestSchema, type UploadPartRequestSchema } from "@rms/proto";
import { describe, expect, it } from "vitest";
import { IDEMPOTENCY_RECORDS_COLLECTION, IdempotencyRecords } from "../storage/idempotency-records.js";
import { CHUNK_BYTES } from "../storage/byte-store.js";
import { useFilesCore } from "../testutil/files.js";

const t = useFilesCore();

type Tenant = { accountId: string; livemode: boolean };
type FileMsg = MessageInitShape<typeof UploadFileRequestSchema>;
type PartMsg = MessageInitShape<typeof UploadPartRequestSchema>;

/** A point an upload's stream waits at until the test lets it go on. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

async function* fileMessages(
  tenant: Tenant,
  bytes: Buffer,
  options: { filename?: string; purpose?: string; endPurpose?: string; maxBytes?: number; end?: boolean; pause?: Promise<void> } = {},
): AsyncGenerator<FileMsg> {
  yield {
    part: {
      case: "start",
      value: {
        tenant,
        purpose: options.purpose ?? "resources_import",
        filename: options.filename ?? "rows.jsonl",
        type: "jsonl",
        maxBytes: BigInt(options.maxBytes ?? 0),
      },
    },
  };
  const half = Math.floor(bytes.length / 2);
  yield { part: { case: "data", value: bytes.subarray(0, half) } };
  if (options.pause) await options.pause;
  yield { part: { case: "data", value: bytes.subarray(half) } };
  if (options.end !== false)
    yield { part: { case: "end", value: { size: BigInt(bytes.length), ...(options.endPurpose === undefined ? {} : { purpose: options.endPurpose }) } } };
}

/** An upload under `key`: its answer (or error) and the `rms-replay` trailer core sent with it (undefined: executed). */
async function keyed<T>(key: string, call: (options: { metadata: Record<string, string>; onTrailers: (m: Metadata) => void }) => Promise<T>) {
  let replay: { requestId: string } | undefined;
  const onTrailers = (trailers: Metadata) => {
    const value = trailers.get(REPLAY_METADATA)[0];
    replay = typeof value === "string" ? (JSON.parse(value) as { requestId: string }) : undefined;
  };
  try {
    return {
      answer: await call({ metadata: { "idempotency-key": key, "rms-request-id": `req_${randomBytes(4).toString("hex")}` }, onTrailers }),
      replay,
      error: undefined,
    };
  } catch (error) {
    return { answer: undefined, replay, error: error as { code?: string; grpcCode?: number } };
  }
}

const blobCount = () => t.store.bytes.blobs.countDocuments({});

describe("uploads under an Idempotency-Key (rpc.upload: core's key protocol)", () => {
  it("a repeat with the same bytes replays the first file (marked), keeps none of its bytes; other bytes or fields are idempotency_key_reused", async () => {
    const account = await t.newAccount();
    const bytes = randomBytes(CHUNK_BYTES + 500);
    const first = await keyed("up-1", (o) => t.files.uploadFile(fileMessages(account.test, bytes), o));
    expect(first.replay).toBeUndefined();
    const blobs = await blobCount();
    const again = await keyed("up-1", (o) => t.files.uploadFile(fileMessages(account.test, bytes), o));
    expect(again.answer?.file?.id).toBe(first.answer?.file?.id);
    expect(again.replay?.requestId).toMatch(/^req_/);
    expect(await blobCount()).toBe(blobs);
    const otherBytes = await keyed("up-1", (o) => t.files.uploadFile(fileMessages(account.test, randomBytes(CHUNK_BYTES + 500)), o));
    expect(otherBytes.error).toMatchObject({ code: "idempotency_key_reused" });
    // Another field of the start is refused at once, before its bytes are read: this stream never ends.
    const never = gate();
    const otherName = await keyed("up-1", (o) =>
      t.files.uploadFile(fileMessages(account.test, bytes, { filename: "other.jsonl", pause: never.opened, end: false }), o),
    );
    expect(otherName.error).toMatchObject({ code: "idempotency_key_reused" });
    never.open();
    expect(await t.store.files.countDocuments({ account: account.id })).toBe(1);
    expect(await blobCount()).toBe(blobs);
  });

  it("a repeat sent while the first still streams is 409 in flight; once the first answered, its answer", async () => {
    const account = await t.newAccount();
    const bytes = randomBytes(2000);
    const paused = gate();
    const first = keyed("up-flight", (o) => t.files.uploadFile(fileMessages(account.test, bytes, { pause: paused.opened }), o));
    // The lock is taken when the stream starts.
    const records = t.db.collection(IDEMPOTENCY_RECORDS_COLLECTION);
    while ((await records.countDocuments({ account: account.id })) === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    const meanwhile = await keyed("up-flight", (o) => t.files.uploadFile(fileMessages(account.test, bytes), o));
    expect(meanwhile.error).toMatchObject({ code: "idempotency_key_in_use" });
    paused.open();
    const answered = await first;
    expect(answered.answer?.file?.size).toBe(2000n);
    const after = await keyed("up-flight", (o) => t.files.uploadFile(fileMessages(account.test, bytes), o));
    expect(after.answer?.file?.id).toBe(answered.answer?.file?.id);
    expect(after.replay).toBeDefined();
  });

  it("a refusal decided at the stream's end is replayed for the same bytes; one decided before it (413) for any", async () => {
    const account = await t.newAccount();
    const bytes = randomBytes(3000);
    // The purpose sent after the bytes is one clients do not upload.
    const refused = await keyed("up-end", (o) => t.files.uploadFile(fileMessages(account.test, bytes, { purpose: "", endPurpose: "job_results" }), o));
    expect(refused.error).toMatchObject({ code: "parameter_invalid" });
    expect(refused.replay).toBeUndefined();
    const replayed = await keyed("up-end", (o) => t.files.uploadFile(fileMessages(account.test, bytes, { purpose: "", endPurpose: "job_results" }), o));
    expect(replayed.error).toMatchObject({ code: "parameter_invalid" });
    expect(replayed.replay).toBeDefined();
    const other = await keyed("up-end", (o) =>
      t.files.uploadFile(fileMessages(account.test, randomBytes(3000), { purpose: "", endPurpose: "job_results" }), o),
    );
    expect(other.error).toMatchObject({ code: "idempotency_key_reused" });

    const tooLarge = await keyed("up-413", (o) => t.files.uploadFile(fileMessages(account.test, randomBytes(2 * CHUNK_BYTES), { maxBytes: CHUNK_BYTES }), o));
    expect(tooLarge.error).toMatchObject({ code: "request_too_large" });
    const again = await keyed("up-413", (o) => t.files.uploadFile(fileMessages(account.test, randomBytes(2 * CHUNK_BYTES), { maxBytes: CHUNK_BYTES }), o));
    expect(again.error).toMatchObject({ code: "request_too_large" });
    expect(again.replay).toBeDefined();
    expect(await t.store.files.countDocuments({ account: account.id })).toBe(0);
  });

  it("a stream cut off before its end records nothing and frees the key: the retry executes", async () => {
    const account = await t.newAccount();
    const bytes = randomBytes(CHUNK_BYTES + 10);
    const cut = await keyed("up-cut", (o) => t.files.uploadFile(fileMessages(account.test, bytes, { end: false }), o));
    expect(cut.error).toMatchObject({ grpcCode: 14 });
    expect(await t.db.collection(IDEMPOTENCY_RECORDS_COLLECTION).countDocuments({ account: account.id })).toBe(0);
    const retry = await keyed("up-cut", (o) => t.files.uploadFile(fileMessages(account.test, bytes), o));
    expect(retry.replay).toBeUndefined();
    expect(retry.answer?.file?.size).toBe(BigInt(bytes.length));
    expect(await t.store.files.countDocuments({ account: account.id })).toBe(1);
  });

  it("a part under a key is added once: the repeat answers the first part; other bytes are reused", async () => {
    const account = await t.newAccount();
    const { upload } = await t.files.createUpload({ tenant: account.test, purpose: "resources_import", filename: "p.jsonl", bytes: 100n, type: "jsonl" });
    async function* partMessages(bytes: Buffer): AsyncGenerator<PartMsg> {
      yield { part: { case: "start", value: { tenant: account.test, uploadId: upload!.id } } };
      yield { part: { case: "data", value: bytes } };
      yield { part: { case: "end", value: { size: BigInt(bytes.length) } } };
    }
    const bytes = randomBytes(40);
    const first = await keyed("part-1", (o) => t.files.uploadPart(partMessages(bytes), o));
    const again = await keyed("part-1", (o) => t.files.uploadPart(partMessages(bytes), o));
    expect(again.answer?.part?.id).toBe(first.answer?.part?.id);
    expect(again.replay).toBeDefined();
    const other = await keyed("part-1", (o) => t.files.uploadPart(partMessages(randomBytes(40)), o));
    expect(other.error).toMatchObject({ code: "idempotency_key_reused" });
    expect(await t.store.parts.countDocuments({ upload: upload!.id })).toBe(1);
  });
});

describe("a file under a key whose core died before its one commit", () => {
  it("left its bytes and its lock, no file: the retry takes the dead lock over and makes the one file; the dead attempt's bytes are reclaimed", async () => {
    const account = await t.newAccount();
    const bytes = randomBytes(CHUNK_BYTES + 77);
    const first = await keyed("up-crash", (o) => t.files.uploadFile(fileMessages(account.test, bytes), o));
    // What a core killed after the bytes and before the commit of the file's document with its record leaves: the
    // bytes (a blob nothing owns), the lock held by nobody, past its end, and no file.
    const dead = first.answer!.file!.id;
    await t.store.files.deleteOne({ _id: dead });
    const records = t.db.collection(IDEMPOTENCY_RECORDS_COLLECTION);
    await records.updateOne({ account: account.id } as never, {
      $set: { completed: false, locked_until: new Date(Date.now() - 1000) },
      $unset: { answer: "" },
    });
    const retry = await keyed("up-crash", (o) => t.files.uploadFile(fileMessages(account.test, bytes), o));
    expect(retry.replay).toBeUndefined();
    expect(retry.answer?.file?.id).not.toBe(dead);
    expect(await t.store.files.countDocuments({ account: account.id })).toBe(1);
    // The dead attempt's bytes are nobody's: the next pass reclaims them, the file's stay.
    const file = await t.store.files.findOne({ _id: retry.answer!.file!.id });
    await t.store.bytes.checkSoon([dead], Date.now());
    await t.store.sweep();
    expect(await t.store.bytes.blobs.countDocuments({ _id: dead })).toBe(0);
    expect(await t.store.bytes.chunks.countDocuments({ b: dead })).toBe(0);
    expect(await t.store.bytes.chunks.countDocuments({ b: file!.blobs[0]!.id })).toBe(2);
    const downloaded: Buffer[] = [];
    for await (const message of t.files.readFile({ tenant: account.test, id: file!._id }))
      if (message.part.case === "data") downloaded.push(Buffer.from(message.part.value));
    expect(Buffer.concat(downloaded).equals(bytes)).toBe(true);
    // And the retry's answer is the key's from now on.
    const again = await keyed("up-crash", (o) => t.files.uploadFile(fileMessages(account.test, bytes), o));
    expect(again.replay).toBeDefined();
    expect(again.answer?.file?.id).toBe(retry.answer?.file?.id);
  });
});

describe("an upload's lock", () => {
  it("is extended while held, and not once its answer is recorded", async () => {
    const records = new IdempotencyRecords(t.db);
    const scope = { id: `acct_lease/test/${randomBytes(6).toString("hex")}`, account: "acct_lease", livemode: false };
    const begun = await records.begin(scope, "fp", "req_1", 1_000);
    if (begun.kind !== "acquired") throw new Error(`expected the lock, got ${begun.kind}`);
    const collection = t.db.collection(IDEMPOTENCY_RECORDS_COLLECTION);
    const before = (await collection.findOne({ _id: scope.id } as never))!["locked_until"] as Date;
    expect(await begun.lease.extend(60_000)).toBe(true);
    const after = await collection.findOne({ _id: scope.id } as never);
    expect((after!["locked_until"] as Date).getTime()).toBeGreaterThan(before.getTime() + 30_000);
    expect((after!["expires_at"] as Date).getTime()).toBeGreaterThanOrEqual((after!["locked_until"] as Date).getTime());
    await begun.lease.complete({ headers: "[]" }, "req_1");
    expect(await begun.lease.extend(60_000)).toBe(false);
  });
});
