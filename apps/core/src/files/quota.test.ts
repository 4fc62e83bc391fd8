import { createHash, randomBytes } from "node:crypto";
import { FileService } from "@rms/proto";
import { beforeAll, describe, expect, it } from "vitest";
import { useTestCore } from "../testutil/harness.js";
import { FileStore } from "./store.js";
import { uploadFileId } from "./uploads.js";

// The per-account, per-mode quota of stored bytes (FILES_QUOTA_BYTES) and the usage it is checked against: summed
// from the files and pending parts stored, so it is what is stored whatever happened between the writes.

const QUOTA = 10_000;
const t = useTestCore({ settings: { filesQuotaBytes: QUOTA } });
let files: ReturnType<typeof t.client<typeof FileService>>;
let store: FileStore;
beforeAll(() => {
  files = t.client(FileService);
  store = new FileStore(t.db, { quotaBytes: QUOTA });
});

type Tenant = { accountId: string; livemode: boolean };
const sha = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

async function upload(tenant: Tenant, bytes: Buffer) {
  async function* messages() {
    yield { part: { case: "start" as const, value: { tenant, purpose: "resources_import", filename: "q.jsonl", type: "jsonl", maxBytes: 0n } } };
    for (let at = 0; at < bytes.length; at += 1000) yield { part: { case: "data" as const, value: bytes.subarray(at, at + 1000) } };
    yield { part: { case: "end" as const, value: { size: BigInt(bytes.length) } } };
  }
  return (await files.uploadFile(messages())).file!;
}

async function part(tenant: Tenant, uploadId: string, bytes: Buffer) {
  async function* messages() {
    yield { part: { case: "start" as const, value: { tenant, uploadId } } };
    yield { part: { case: "data" as const, value: bytes } };
    yield { part: { case: "end" as const, value: { size: BigInt(bytes.length) } } };
  }
  return (await files.uploadPart(messages())).part!;
}

const usageOf = async (tenant: Tenant) => (await files.listFiles({ tenant, limit: 1 })).usage!;

describe("the files quota", () => {
  it("uploads at once: the usage is their sum, per mode; the list answers it; past the quota an upload is limit_exceeded before a byte is read", async () => {
    const account = await t.newAccount();
    const sizes = [1000, 2000, 3000, 500];
    const made = await Promise.all(sizes.map((size) => upload(account.test, randomBytes(size))));
    expect(made.map((f) => Number(f.size))).toEqual(sizes);
    expect(await usageOf(account.test)).toMatchObject({ usedBytes: 6500n, quotaBytes: BigInt(QUOTA) });
    expect((await usageOf(account.live)).usedBytes).toBe(0n);
    expect((await files.admitUpload({ tenant: account.test })).usage).toMatchObject({ usedBytes: 6500n });
    await expect(files.admitUpload({ tenant: account.test, bytes: 3501n })).rejects.toMatchObject({ code: "limit_exceeded" });

    // An upload that passes the quota on the way is cut there, nothing kept.
    await expect(upload(account.test, randomBytes(3501))).rejects.toMatchObject({ code: "limit_exceeded" });
    expect((await usageOf(account.test)).usedBytes).toBe(6500n);
    await upload(account.test, randomBytes(3500));
    // At the quota: refused at the start, before a byte is read (a stream that never sends one is answered).
    async function* startOnly() {
      yield {
        part: { case: "start" as const, value: { tenant: account.test, purpose: "resources_import", filename: "q.jsonl", type: "jsonl", maxBytes: 0n } },
      };
      await new Promise(() => {});
    }
    await expect(files.uploadFile(startOnly())).rejects.toMatchObject({ code: "limit_exceeded" });
    await expect(files.admitUpload({ tenant: account.test })).rejects.toMatchObject({ code: "limit_exceeded" });
    await expect(
      files.createUpload({ tenant: account.test, purpose: "resources_import", filename: "u.jsonl", bytes: 1n, type: "jsonl" }),
    ).rejects.toMatchObject({
      code: "limit_exceeded",
    });
    // Under an Idempotency-Key that has a record, the question is the record's: admitted (its answer is replayed).
    const keyed = { metadata: { "idempotency-key": "quota-key" } };
    await expect(files.admitUpload({ tenant: account.test, idempotencyKey: "quota-key" })).rejects.toMatchObject({ code: "limit_exceeded" });
    await expect(files.uploadFile(startOnly(), keyed)).rejects.toMatchObject({ code: "limit_exceeded" });
    expect((await files.admitUpload({ tenant: account.test, idempotencyKey: "quota-key" })).usage!.usedBytes).toBe(10_000n);
    // Deleting makes room.
    await files.deleteFile({ tenant: account.test, id: made[0]!.id });
    expect((await usageOf(account.test)).usedBytes).toBe(9000n);
    expect((await upload(account.test, randomBytes(1000))).size).toBe(1000n);
  });

  it(
    "parts count while their upload is pending, once as the file after completion, never twice: not even after a crash between the file and the " +
      "parts' expiry",
    async () => {
      const account = await t.newAccount();
      const { upload: pending } = await files.createUpload({
        tenant: account.test,
        purpose: "resources_import",
        filename: "p.jsonl",
        bytes: 3000n,
        type: "jsonl",
      });
      // A part whose declared length passes the upload's bytes, or the quota, is refused at its start, before a byte.
      async function* declared(bytes: bigint) {
        yield { part: { case: "start" as const, value: { tenant: account.test, uploadId: pending!.id, bytes } } };
        await new Promise(() => {});
      }
      await expect(files.uploadPart(declared(3001n))).rejects.toMatchObject({ code: "request_too_large" });
      const pieces = [randomBytes(1000), randomBytes(2000)];
      const parts = [await part(account.test, pending!.id, pieces[0]!), await part(account.test, pending!.id, pieces[1]!)];
      expect((await usageOf(account.test)).usedBytes).toBe(3000n);
      const done = await files.completeUpload({ tenant: account.test, id: pending!.id, partIds: parts.map((p) => p.id) });
      expect(done.upload!.file!.sha256).toBe(sha(Buffer.concat(pieces)));
      expect((await usageOf(account.test)).usedBytes).toBe(3000n);
      // As if core died after the file and before the parts' expiry: the parts live on, and still count once.
      await store.parts.updateMany({ upload: pending!.id }, { $set: { expires_at: new Date(Date.now() + 3_600_000) } });
      expect(await store.files.countDocuments({ _id: uploadFileId(pending!.id) })).toBe(1);
      expect((await usageOf(account.test)).usedBytes).toBe(3000n);
      // A canceled upload's parts stop counting at once.
      const { upload: canceled } = await files.createUpload({
        tenant: account.test,
        purpose: "resources_import",
        filename: "c.jsonl",
        bytes: 500n,
        type: "jsonl",
      });
      await part(account.test, canceled!.id, randomBytes(500));
      expect((await usageOf(account.test)).usedBytes).toBe(3500n);
      await files.cancelUpload({ tenant: account.test, id: canceled!.id });
      expect((await usageOf(account.test)).usedBytes).toBe(3000n);
    },
  );

  it("an expired file stops counting at its expiry, before the TTL monitor takes it; a held one counts", async () => {
    const account = await t.newAccount();
    const tenant = { account: account.id, livemode: false };
    const a = await upload(account.test, randomBytes(100));
    const b = await upload(account.test, randomBytes(200));
    await store.files.updateOne({ _id: a.id }, { $set: { expires_at: new Date(Date.now() - 1000) } });
    await store.hold(tenant, b.id, "job_x");
    expect((await store.usage(tenant)).used).toBe(200);
  });
});
