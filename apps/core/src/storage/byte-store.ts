import { createHash } from "node:crypto";
import { isDuplicateKeyError } from "@rms/proto";
import { Binary, type Collection, type Db } from "mongodb";

/**
 * A store of byte sequences ("blobs") in chunk documents, for bytes too large for one document (ARCHITECTURE rule
 * 9, in ../shared/docs/; docs/files.md, "Chunks"). It knows no domain: a blob is an id, its chunks and a small
 * document of its own; who owns a blob, and for how long, is asked of the owners at each sweep.
 *
 * - A chunk is one document `{b: blob, n: index, o: offset, data}` under a unique `(b, n)` index; a write of index n
 *   again replaces it (a worker that took over a job's output rewrites what the dead one may have written).
 * - A blob document `{_id, state: "open"|"sealed"|"reclaiming", size, sha256, check_at}` is written before its first
 *   chunk. `check_at` is when the sweep looks at it next: while the blob is written, a writing lease that its writer
 *   renews while it is alive; once sealed and owned, the time its owner says it is needed until.
 * - The sweep takes a blob by one write that sets `state: "reclaiming"` on a blob still due; a writer's renewal and
 *   its seal both require a blob not being reclaimed. So a writer either renewed or sealed first (the blob is no
 *   longer due, and the sweep's take finds nothing) or learns that its bytes are gone (BlobLost) and answers an
 *   error: a blob is never sealed, and so never announced, after the sweep took it.
 * - Nothing is deleted by a TTL index here: a TTL index cannot take a blob's chunks with it. The sweep (`sweep`)
 *   reads blobs due for a check (index on `check_at`), asks the owners, and deletes the chunks and then the blob
 *   document of each one nobody owns (index on `(b, n)`). So chunks orphaned by a crash, by a client that went
 *   away mid-upload or by an owner that expired are all reclaimed, and a blob an owner still names never is.
 *
 * Every write uses the client's write concern (majority, journaled: storage/client-options.ts); a blob is sealed
 * only after every chunk write was acknowledged, so an owner written after `seal` never names bytes that are not
 * durable.
 */

/** The bytes of a chunk written by `write` (streamed writes): 1 MiB, a quarter of gRPC's default message limit. */
export const CHUNK_BYTES = 1024 * 1024;
/** The largest chunk `putChunk` takes (a document is at most 16 MiB). */
export const MAX_PUT_CHUNK_BYTES = 15 * 1024 * 1024;
/** How long a blob written by position (`putChunk`, a job's output) lives without a write before the sweep may take it. */
export const WRITING_LEASE_MS = 24 * 60 * 60 * 1000;
/** The default of the same for a streamed write (`write`, FILES_WRITE_LEASE_MS), renewed by its writer while alive. */
export const STREAM_LEASE_MS = 10 * 60 * 1000;
/** How often a streamed write renews its lease at most: every quarter of the lease, and at least once a minute. */
const RENEW_EVERY_MS = 60 * 1000;
/** When the sweep looks again at a blob whose owner keeps it with no end (a file held by a job). */
const RECHECK_HELD_MS = 24 * 60 * 60 * 1000;
/** Chunk writes of one streamed write in flight at once: it holds about this many MiB. */
const WRITES_IN_FLIGHT = 4;
/**
 * The bytes a streamed write holds at most: its chunk writes in flight, and the chunk it fills meanwhile (what
 * an upload keeps in core while the database is slower than its sender: docs/files.md, "Memory").
 */
export const STREAMED_WRITE_BYTES_HELD = (WRITES_IN_FLIGHT + 1) * CHUNK_BYTES;
/** Chunks a read keeps in flight: the driver's batch, so a read holds about this many MiB. */
const READ_BATCH = 4;

export interface BlobDocument {
  _id: string;
  /** `reclaiming`: taken by the sweep, which deletes its chunks and then it; nothing renews or seals it any more. */
  state: "open" | "sealed" | "reclaiming";
  created: Date;
  check_at: Date;
  size?: number;
  sha256?: string;
  chunks?: number;
}

export interface ChunkDocument {
  _id: string;
  b: string;
  n: number;
  /** The chunk's first byte's offset in the blob: set by streamed writes, and by `seal` for put chunks. */
  o?: number;
  /** The fence (a job's lease epoch) of a put chunk's last writer, when it gave one. */
  f?: number;
  data: Binary;
}

/** A blob and the bytes it holds, as an owner lists it (a file may be a list of blobs, in order). */
export interface BlobRef {
  id: string;
  size: number;
}

export interface Sealed {
  size: number;
  sha256: string;
}

/**
 * Until when each blob is owned, for the ids asked: a Date (owned until then), null (owned with no end), absent
 * (not owned: the sweep reclaims it).
 */
export type Owners = (ids: readonly string[]) => Promise<ReadonlyMap<string, Date | null>>;

/** A write past `maxBytes`: the blob was discarded. */
export class BlobTooLarge extends Error {
  constructor(readonly maxBytes: number) {
    super(`more than ${maxBytes} bytes`);
  }
}

/** A fenced put met a chunk written under a higher fence (`putChunk`): the writer lost its lease. */
export class FencedOut extends Error {}

/** A put blob whose chunk indexes have a gap (`seal`): some chunk was never written or was reclaimed. */
export class BlobIncomplete extends Error {}

/** A blob the sweep took while it was being written (its writer stalled past its lease): its bytes are gone. */
export class BlobLost extends Error {}

/** The filter of a blob the sweep has not taken: a writer renews and seals only such a blob. */
const NOT_RECLAIMING = { $in: ["open", "sealed"] as BlobDocument["state"][] };

export interface ByteStoreOptions {
  /** A streamed write's lease (FILES_WRITE_LEASE_MS): the sweep takes its blob this long after its writer stopped renewing. */
  readonly streamLeaseMs?: number;
}

export class ByteStore {
  readonly blobs: Collection<BlobDocument>;
  readonly chunks: Collection<ChunkDocument>;
  readonly streamLeaseMs: number;

  constructor(db: Db, prefix = "blob", options: ByteStoreOptions = {}) {
    this.blobs = db.collection<BlobDocument>(`${prefix}s`);
    this.chunks = db.collection<ChunkDocument>(`${prefix}_chunks`);
    this.streamLeaseMs = options.streamLeaseMs ?? STREAM_LEASE_MS;
  }

  async ensureIndexes(): Promise<void> {
    await this.blobs.createIndex({ check_at: 1 }, { name: "check_at" });
    await this.chunks.createIndex({ b: 1, n: 1 }, { unique: true, name: "blob_index" });
    await this.chunks.createIndex({ b: 1, o: 1 }, { name: "blob_offset" });
  }

  /** Writes (or renews) the blob's document as open, before any chunk: from now the sweep knows it. */
  async open(id: string, nowMs = Date.now(), leaseMs = WRITING_LEASE_MS): Promise<void> {
    await this.blobs.updateOne(
      { _id: id },
      { $set: { check_at: new Date(nowMs + leaseMs) }, $setOnInsert: { state: "open", created: new Date(nowMs) } },
      { upsert: true },
    );
  }

  /** Moves a streamed write's lease on; false when the sweep took the blob (or it is gone). */
  private async renew(id: string): Promise<boolean> {
    const renewed = await this.blobs.updateOne({ _id: id, state: NOT_RECLAIMING }, { $set: { check_at: new Date(Date.now() + this.streamLeaseMs) } });
    return renewed.matchedCount === 1;
  }

  /**
   * Writes a whole byte stream as the blob `id` (a new id: one write per blob), in chunks of CHUNK_BYTES, hashing on
   * the way, and seals it. Holds at most one chunk. Past `maxBytes`, or when `source` throws (the client went
   * away), the chunks written so far are deleted (the sweep is the backstop if this process dies first) and the
   * error is rethrown (BlobTooLarge past the limit).
   *
   * While the write runs (bytes arriving, or awaited from a slow client, or chunk writes waiting for the database),
   * its lease is renewed every quarter of it: the sweep never takes the blob of a live writer, however slowly its
   * bytes come (a stream idle too long is cut by its caller, which ends the write). A writer that stalled past its
   * lease anyway (a paused process) finds the blob taken at its next renewal or at its seal: BlobLost, its chunks
   * deleted, and no seal, so nothing is announced over bytes that are gone. The seal moves the lease on once more,
   * which covers the owner's write that follows it.
   */
  async write(id: string, source: AsyncIterable<Uint8Array>, options: { maxBytes?: number } = {}): Promise<Sealed> {
    const maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;
    const hash = createHash("sha256");
    let size = 0;
    let n = 0;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    await this.open(id, Date.now(), this.streamLeaseMs);
    // The lease's renewal: a timer of the write, so that it runs while the source is awaited as much as while it flows.
    let lost = false;
    let renewing: Promise<void> | null = null;
    const renewEvery = Math.max(1, Math.min(RENEW_EVERY_MS, Math.floor(this.streamLeaseMs / 4)));
    const renewal = setInterval(() => {
      renewing ??= this.renew(id)
        .then(
          (held) => {
            if (!held) lost = true;
          },
          // A failed renewal (the database unreachable) is tried again at the next tick; the sweep needs it too.
          () => undefined,
        )
        .finally(() => {
          renewing = null;
        });
    }, renewEvery);
    renewal.unref();
    const stillHeld = () => {
      if (lost) throw new BlobLost(`blob ${id} was reclaimed while it was written`);
    };
    // Up to WRITES_IN_FLIGHT chunk writes at once (each waits for a majority's journal): the source is read on
    // while they complete, and held back (its backpressure) once that many are waiting.
    const inFlight = new Set<Promise<void>>();
    let writeFailed: unknown;
    const insert = async (bytes: Buffer) => {
      const index = n++;
      // An upsert: a blob id may be written again (a job create repeated after a crash writes the same bytes).
      const write = this.chunks
        .replaceOne({ _id: `${id}/${index}` }, { b: id, n: index, o: index * CHUNK_BYTES, data: new Binary(bytes) }, { upsert: true })
        .then(
          () => undefined,
          (error: unknown) => {
            writeFailed ??= error;
          },
        );
      const tracked = write.finally(() => inFlight.delete(tracked));
      inFlight.add(tracked);
      if (inFlight.size >= WRITES_IN_FLIGHT) await Promise.race(inFlight);
      if (writeFailed !== undefined) throw writeFailed;
    };
    let sealed: Sealed;
    try {
      for await (const piece of source) {
        stillHeld();
        if (piece.length === 0) continue;
        size += piece.length;
        if (size > maxBytes) throw new BlobTooLarge(maxBytes);
        hash.update(piece);
        pending.push(Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength));
        pendingBytes += piece.length;
        if (pendingBytes < CHUNK_BYTES) continue;
        const all = Buffer.concat(pending, pendingBytes);
        let at = 0;
        for (; all.length - at >= CHUNK_BYTES; at += CHUNK_BYTES) await insert(all.subarray(at, at + CHUNK_BYTES));
        pending = at < all.length ? [all.subarray(at)] : [];
        pendingBytes = all.length - at;
      }
      if (pendingBytes > 0) await insert(Buffer.concat(pending, pendingBytes));
      await Promise.all(inFlight);
      if (writeFailed !== undefined) throw writeFailed;
      clearInterval(renewal);
      await renewing;
      stillHeld();
      sealed = { size, sha256: hash.digest("hex") };
      // Sealed only if the sweep has not taken it (a blob id written again may be sealed already: same bytes).
      const seal = await this.blobs.updateOne(
        { _id: id, state: NOT_RECLAIMING },
        { $set: { state: "sealed", size, sha256: sealed.sha256, chunks: n, check_at: new Date(Date.now() + this.streamLeaseMs) } },
      );
      if (seal.matchedCount !== 1) throw new BlobLost(`blob ${id} was reclaimed before it was sealed`);
    } catch (error) {
      clearInterval(renewal);
      pending = [];
      await Promise.allSettled(inFlight);
      await this.discard(id).catch(() => {});
      throw error;
    }
    return sealed;
  }

  /**
   * Writes chunk `n` of a blob written by position (a job's output): the same index again replaces it. The first
   * put of a blob opens it; each put renews its writing lease. With `fence` (the writer's lease epoch), a chunk
   * written under a higher fence is never replaced: the put throws FencedOut (a writer whose lease was taken over
   * cannot overwrite what its successor wrote at that index).
   */
  async putChunk(id: string, n: number, bytes: Uint8Array, nowMs = Date.now(), fence?: number): Promise<void> {
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`chunk index ${n} is not a non-negative integer`);
    if (bytes.length > MAX_PUT_CHUNK_BYTES) throw new Error(`a chunk is at most ${MAX_PUT_CHUNK_BYTES} bytes`);
    await this.open(id, nowMs);
    const data = new Binary(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    if (fence === undefined) {
      await this.chunks.replaceOne({ _id: `${id}/${n}` }, { b: id, n, data }, { upsert: true });
      return;
    }
    // No chunk, or one of a fence at most ours: replaced (or inserted). One of a higher fence: the filter matches
    // nothing, the upsert's insert meets the `_id` and is refused.
    try {
      await this.chunks.replaceOne(
        { _id: `${id}/${n}`, $or: [{ f: { $exists: false } }, { f: { $lte: fence } }] },
        { b: id, n, f: fence, data },
        { upsert: true },
      );
    } catch (error) {
      if (isDuplicateKeyError(error)) throw new FencedOut(`chunk ${n} of ${id} was written under a fence above ${fence}`);
      throw error;
    }
  }

  /**
   * Seals a blob written by `putChunk`: streams its chunks once in index order (they must be 0..k-1, else
   * BlobIncomplete), computing size and sha256 and recording each chunk's offset. Sealing a sealed blob answers
   * what it recorded (a finish repeated after a crash).
   */
  async seal(id: string): Promise<Sealed> {
    const blob = await this.blobs.findOne({ _id: id });
    if (blob?.state === "sealed") return { size: blob.size ?? 0, sha256: blob.sha256 ?? "" };
    if (blob === null) throw new BlobIncomplete(`blob ${id} does not exist`);
    if (blob.state === "reclaiming") throw new BlobIncomplete(`blob ${id} is being reclaimed`);
    const hash = createHash("sha256");
    let size = 0;
    let expected = 0;
    let offsets: { updateOne: { filter: { _id: string }; update: { $set: { o: number } } } }[] = [];
    const cursor = this.chunks.find({ b: id }, { sort: { b: 1, n: 1 }, batchSize: READ_BATCH });
    for await (const chunk of cursor) {
      if (chunk.n !== expected) throw new BlobIncomplete(`blob ${id} has no chunk ${expected}`);
      expected++;
      if (chunk.o !== size) offsets.push({ updateOne: { filter: { _id: chunk._id }, update: { $set: { o: size } } } });
      hash.update(chunk.data.buffer);
      size += chunk.data.buffer.length;
      if (offsets.length >= 256) {
        await this.chunks.bulkWrite(offsets, { ordered: false });
        offsets = [];
      }
    }
    if (offsets.length > 0) await this.chunks.bulkWrite(offsets, { ordered: false });
    const sha256 = hash.digest("hex");
    const sealedNow = await this.blobs.updateOne({ _id: id, state: "open" }, { $set: { state: "sealed", size, sha256, chunks: expected } });
    if (sealedNow.matchedCount !== 1) {
      // Sealed meanwhile by another finish (its record is the same bytes), or taken by the sweep: never announced then.
      const now = await this.blobs.findOne({ _id: id }, { projection: { state: 1, size: 1, sha256: 1 } });
      if (now?.state !== "sealed") throw new BlobIncomplete(`blob ${id} was reclaimed while it was sealed`);
      return { size: now.size ?? 0, sha256: now.sha256 ?? "" };
    }
    return { size, sha256 };
  }

  /** Deletes a blob's chunks, then its document (discarding an unfinished write; the sweep's delete). */
  async discard(id: string): Promise<void> {
    await this.chunks.deleteMany({ b: id });
    await this.blobs.deleteOne({ _id: id });
  }

  /** A sealed blob's size and sha256, or null. */
  async sealed(id: string): Promise<Sealed | null> {
    const blob = await this.blobs.findOne({ _id: id, state: "sealed" }, { projection: { size: 1, sha256: 1 } });
    return blob === null ? null : { size: blob.size ?? 0, sha256: blob.sha256 ?? "" };
  }

  /** Asks the sweep to look at these blobs at its next pass (their owner let go of them). */
  async checkSoon(ids: readonly string[], nowMs = Date.now()): Promise<void> {
    if (ids.length > 0) await this.blobs.updateMany({ _id: { $in: [...ids] } }, { $set: { check_at: new Date(nowMs) } });
  }

  /**
   * Bytes `[start, end)` of the sequence the blobs make in order (a file of segments), streamed: about `batch` chunks
   * in memory (the driver's batch). The caller checks the range against the sizes it holds.
   */
  async *read(refs: readonly BlobRef[], start = 0, end?: number, batch = READ_BATCH): AsyncGenerator<Buffer> {
    const total = refs.reduce((sum, r) => sum + r.size, 0);
    const stop = Math.min(end ?? total, total);
    let base = 0;
    for (const ref of refs) {
      const from = Math.max(start - base, 0);
      const to = Math.min(stop - base, ref.size);
      base += ref.size;
      if (to <= from) continue;
      yield* this.readBlob(ref.id, from, to, batch);
    }
  }

  private async *readBlob(id: string, from: number, to: number, batch: number): AsyncGenerator<Buffer> {
    // The chunk holding `from`: the last one starting at or before it (index-served on (b, o)).
    const first = await this.chunks.findOne({ b: id, o: { $lte: from } }, { sort: { b: -1, o: -1 }, projection: { o: 1 } });
    if (first === null || first.o === undefined) throw new BlobIncomplete(`blob ${id} has no chunk at ${from}`);
    let at = first.o;
    const cursor = this.chunks.find({ b: id, o: { $gte: first.o } }, { sort: { b: 1, o: 1 }, batchSize: batch });
    try {
      for await (const chunk of cursor) {
        if (chunk.o !== at) throw new BlobIncomplete(`blob ${id} has no chunk at ${at}`);
        const bytes = chunk.data.buffer;
        const slice = bytes.subarray(Math.max(from - at, 0), Math.min(to - at, bytes.length));
        at += bytes.length;
        if (slice.length > 0) yield Buffer.from(slice.buffer, slice.byteOffset, slice.byteLength);
        if (at >= to) return;
      }
    } finally {
      await cursor.close();
    }
    if (at < to) throw new BlobIncomplete(`blob ${id} ends at ${at}, before ${to}`);
  }

  /**
   * One pass of the sweep: the blobs due for a check (up to `limit`, index-served), each either kept until its owner's
   * time or reclaimed (chunks, then the document). Answers how many it reclaimed.
   */
  async sweep(owners: Owners, nowMs = Date.now(), limit = 100): Promise<number> {
    const due = await this.blobs
      .find({ check_at: { $lte: new Date(nowMs) } }, { sort: { check_at: 1 }, limit, projection: { _id: 1, check_at: 1, state: 1 } })
      .toArray();
    if (due.length === 0) return 0;
    const owned = await owners(due.map((b) => b._id));
    let reclaimed = 0;
    for (const blob of due) {
      // Taken by a pass that stopped before its deletes: nothing may renew or seal it, so it goes now.
      if (blob.state === "reclaiming") {
        await this.discard(blob._id);
        reclaimed++;
        continue;
      }
      if (owned.has(blob._id)) {
        const until = owned.get(blob._id) ?? null;
        const next = until === null ? nowMs + RECHECK_HELD_MS : Math.max(until.getTime(), nowMs + 60_000);
        // Only if nothing renewed it meanwhile (a writer's lease, another sweep).
        await this.blobs.updateOne({ _id: blob._id, check_at: blob.check_at }, { $set: { check_at: new Date(next) } });
        continue;
      }
      // A writer that renewed its lease or sealed after this read keeps the blob: take only what is still due, and
      // mark it taken in the same write, so that no renewal or seal succeeds after it.
      const still = await this.blobs.findOneAndUpdate(
        { _id: blob._id, check_at: { $lte: new Date(nowMs) }, state: NOT_RECLAIMING },
        { $set: { state: "reclaiming", check_at: new Date(nowMs + RECHECK_HELD_MS) } },
      );
      if (still === null) continue;
      await this.discard(blob._id);
      reclaimed++;
    }
    return reclaimed;
  }
}
