import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { thingsCollection } from "../testutil/storage.js";
import { BlobIncomplete, BlobLost, BlobTooLarge, ByteStore, CHUNK_BYTES, FencedOut, STREAM_LEASE_MS, WRITING_LEASE_MS } from "./byte-store.js";

let t: Awaited<ReturnType<typeof thingsCollection>>;
let store: ByteStore;
beforeAll(async () => {
  t = await thingsCollection();
  store = new ByteStore(t.db, "bs");
  await store.ensureIndexes();
});
afterAll(() => t.close());

const sha = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

async function* pieces(bytes: Buffer, size: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

async function collect(stream: AsyncIterable<Buffer>): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const piece of stream) out.push(piece);
  return Buffer.concat(out);
}

it("writes a stream in 1 MiB chunks with its sha256, and reads back any range of it, across blobs", async () => {
  const bytes = randomBytes(2 * CHUNK_BYTES + 12_345);
  const sealed = await store.write("w1", pieces(bytes, 64 * 1024 + 7));
  expect(sealed).toEqual({ size: bytes.length, sha256: sha(bytes) });
  expect(await store.chunks.countDocuments({ b: "w1" })).toBe(3);
  expect(await store.sealed("w1")).toEqual(sealed);
  expect((await collect(store.read([{ id: "w1", size: bytes.length }]))).equals(bytes)).toBe(true);
  for (const [from, to] of [
    [0, 1],
    [CHUNK_BYTES - 1, CHUNK_BYTES + 1],
    [CHUNK_BYTES, 2 * CHUNK_BYTES],
    [5, bytes.length],
    [bytes.length - 1, bytes.length],
  ] as const) {
    expect((await collect(store.read([{ id: "w1", size: bytes.length }], from, to))).equals(bytes.subarray(from, to))).toBe(true);
  }
  const other = randomBytes(1000);
  await store.write("w2", pieces(other, 300));
  const both = Buffer.concat([bytes, other]);
  const refs = [
    { id: "w1", size: bytes.length },
    { id: "w2", size: other.length },
  ];
  expect((await collect(store.read(refs, bytes.length - 10, bytes.length + 10))).equals(both.subarray(bytes.length - 10, bytes.length + 10))).toBe(true);
});

it("an empty stream is an empty sealed blob", async () => {
  expect(await store.write("empty", pieces(Buffer.alloc(0), 1))).toEqual({ size: 0, sha256: sha(Buffer.alloc(0)) });
  expect(await collect(store.read([{ id: "empty", size: 0 }]))).toHaveLength(0);
});

it("past maxBytes, or when the source fails (a client gone mid-upload), leaves no chunk and no blob", async () => {
  await expect(store.write("big", pieces(randomBytes(3 * CHUNK_BYTES), 100_000), { maxBytes: 2 * CHUNK_BYTES + 5 })).rejects.toBeInstanceOf(BlobTooLarge);
  expect(await store.chunks.countDocuments({ b: "big" })).toBe(0);
  expect(await store.blobs.countDocuments({ _id: "big" })).toBe(0);
  async function* broken(): AsyncGenerator<Uint8Array> {
    yield randomBytes(CHUNK_BYTES + 10);
    throw new Error("client went away");
  }
  await expect(store.write("cut", broken())).rejects.toThrow("client went away");
  expect(await store.chunks.countDocuments({ b: "cut" })).toBe(0);
  expect(await store.blobs.countDocuments({ _id: "cut" })).toBe(0);
});

it("chunks put by index: a rewrite replaces, seal streams them once (size, sha256, offsets), and is idempotent", async () => {
  const parts = [randomBytes(100), randomBytes(CHUNK_BYTES + 3), randomBytes(7)];
  await store.putChunk("p1", 0, parts[0]!);
  await store.putChunk("p1", 2, randomBytes(50)); // a dead worker's chunk, rewritten below
  await store.putChunk("p1", 1, parts[1]!);
  await store.putChunk("p1", 2, parts[2]!);
  const whole = Buffer.concat(parts);
  const sealed = await store.seal("p1");
  expect(sealed).toEqual({ size: whole.length, sha256: sha(whole) });
  expect(await store.seal("p1")).toEqual(sealed);
  expect((await collect(store.read([{ id: "p1", size: whole.length }], 99, 105))).equals(whole.subarray(99, 105))).toBe(true);
  expect((await collect(store.read([{ id: "p1", size: whole.length }]))).equals(whole)).toBe(true);
  // A gap is refused.
  await store.putChunk("gap", 0, parts[0]!);
  await store.putChunk("gap", 2, parts[0]!);
  await expect(store.seal("gap")).rejects.toBeInstanceOf(BlobIncomplete);
});

it(
  "a fenced put replaces a chunk of a lower or equal fence (or none) and is refused by one of a higher fence: a writer whose lease was taken over " +
    "cannot overwrite its successor's chunk",
  async () => {
    const [dead, successor, zombie] = [Buffer.from("rows 1-1000 of the dead worker\n"), Buffer.from("rows 1-250\n"), Buffer.from("late rows 1-1000\n")];
    await store.putChunk("fenced", 0, Buffer.from("unfenced\n"));
    await store.putChunk("fenced", 0, dead, Date.now(), 4);
    await store.putChunk("fenced", 0, successor, Date.now(), 5);
    await expect(store.putChunk("fenced", 0, zombie, Date.now(), 4)).rejects.toBeInstanceOf(FencedOut);
    await store.putChunk("fenced", 0, successor, Date.now(), 5); // the successor's redo of its own part
    const sealed = await store.seal("fenced");
    expect(sealed).toEqual({ size: successor.length, sha256: sha(successor) });
    expect((await collect(store.read([{ id: "fenced", size: successor.length }]))).equals(successor)).toBe(true);
    expect(await store.chunks.countDocuments({ b: "fenced" })).toBe(1);
  },
);

it(
  "the sweep reclaims blobs nobody owns once due (an abandoned write, a crash " + "before the owner was written), keeps owned ones until their owner's time",
  async () => {
    const now = Date.now();
    await store.write("owned", pieces(randomBytes(10), 10));
    await store.write("orphan", pieces(randomBytes(10), 10));
    await store.putChunk("writing", 0, randomBytes(10), now);
    const ownedUntil = new Date(now + 3 * STREAM_LEASE_MS);
    const owners = async (ids: readonly string[]) => new Map(ids.filter((id) => id === "owned").map((id) => [id, ownedUntil] as const));
    // Not yet due: nothing happens.
    expect(await store.sweep(owners, now)).toBe(0);
    // After the streamed write's lease: the orphan goes, the owned one is kept until its owner's time, the blob being
    // written by position (a longer lease) stays.
    const later = now + STREAM_LEASE_MS + 1000;
    const reclaimed = await store.sweep(owners, later, 1000);
    expect(reclaimed).toBeGreaterThanOrEqual(1);
    expect(await store.blobs.countDocuments({ _id: "orphan" })).toBe(0);
    expect(await store.chunks.countDocuments({ b: "orphan" })).toBe(0);
    expect((await store.blobs.findOne({ _id: "owned" }))?.check_at).toEqual(ownedUntil);
    expect(await store.chunks.countDocuments({ b: "writing" })).toBe(1);
    // Once its owner lets go, the owned blob goes at the next pass after its time; the abandoned positional write after its lease.
    expect(await store.sweep(async () => new Map(), now + WRITING_LEASE_MS + 1000, 1000)).toBeGreaterThanOrEqual(2);
    expect(await store.chunks.countDocuments({ b: { $in: ["owned", "writing"] } })).toBe(0);
  },
);

/** `first` at once, then `trickle` bytes one at a time, `gapMs` apart, with `between` run before each. */
async function* slowly(first: Buffer, trickle: Buffer, gapMs: number, between: () => Promise<void> = async () => {}): AsyncGenerator<Uint8Array> {
  yield first;
  for (const byte of trickle) {
    await new Promise((resolve) => setTimeout(resolve, gapMs));
    await between();
    yield Buffer.from([byte]);
  }
}

it("a slow writer keeps its blob however long it takes: its lease is renewed while it is alive, and sweeps meanwhile take nothing", async () => {
  // A lease of 2 s (renewed every 500 ms), sweeps between the bytes, and a write that lasts about two and a half
  // leases, with a full chunk written first.
  const short = new ByteStore(t.db, "bs", { streamLeaseMs: 2_000 });
  const first = randomBytes(CHUNK_BYTES + 10);
  const trickle = randomBytes(10);
  let sweeps = 0;
  const sweep = async () => {
    sweeps++;
    await short.sweep(async () => new Map());
  };
  const sealed = await short.write("slow", slowly(first, trickle, 500, sweep));
  const whole = Buffer.concat([first, trickle]);
  expect(sealed).toEqual({ size: whole.length, sha256: sha(whole) });
  expect(sweeps).toBe(trickle.length);
  expect((await collect(short.read([{ id: "slow", size: whole.length }]))).equals(whole)).toBe(true);
  // Sealed, the lease runs from the seal: an owner written after it finds the blob there.
  expect((await short.blobs.findOne({ _id: "slow" }))?.state).toBe("sealed");
});

it("a writer whose blob the sweep took (it stalled past its lease) fails with BlobLost and leaves nothing: never sealed over bytes that are gone", async () => {
  const short = new ByteStore(t.db, "bs", { streamLeaseMs: 60_000 });
  let taken = false;
  // The writer stalls: its lease is made to have run out, and a sweep takes the blob, between two of its bytes.
  const stall = async () => {
    if (taken) return;
    taken = true;
    await short.blobs.updateOne({ _id: "stalled" }, { $set: { check_at: new Date(Date.now() - 1) } });
    expect(await short.sweep(async () => new Map())).toBe(1);
  };
  await expect(short.write("stalled", slowly(randomBytes(CHUNK_BYTES + 10), randomBytes(3), 1, stall))).rejects.toBeInstanceOf(BlobLost);
  expect(await short.blobs.countDocuments({ _id: "stalled" })).toBe(0);
  expect(await short.chunks.countDocuments({ b: "stalled" })).toBe(0);
});

it("a blob taken by a sweep that stopped before its deletes is deleted by the next pass, whoever claims it", async () => {
  await store.write("half-taken", pieces(randomBytes(10), 10));
  await store.blobs.updateOne({ _id: "half-taken" }, { $set: { state: "reclaiming", check_at: new Date(Date.now() - 1) } });
  await store.sweep(async (ids) => new Map(ids.map((id) => [id, null] as const)));
  expect(await store.blobs.countDocuments({ _id: "half-taken" })).toBe(0);
  expect(await store.chunks.countDocuments({ b: "half-taken" })).toBe(0);
});
