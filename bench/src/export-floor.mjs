// The export's floor (files.mjs, docs/files.md "Measured"): the database's work an export of those rows cannot
// avoid, done by hand. One cursor's rows as the export's JSON lines, written into chunk documents of core's byte
// store layout (`{_id: "<blob>/<n>", b, n, o, data}` under a unique (b, n) and an (b, o) index), one chunk per part of
// the export's size, each insert majority and journaled as core writes, the sha256 computed on the way in, and the
// blob's document written once after the last chunk (as the file's). What the export adds over it is its own: a
// query per part (to resume from a checkpoint), the blob's lease renewed and the checkpoint written per part, the
// fence on each chunk, and the read-back of every chunk at the finish for the size, offsets and sha256.
import { createHash } from "node:crypto";
import { Binary } from "mongodb";

const DURABLE = { writeConcern: { w: "majority", j: true } };

/**
 * Writes `rows` (an async iterable of documents), each formatted by `line`, as chunks of `rowsPerChunk` rows (or
 * `partBytes` of text, whichever first) into `<prefix>_chunks`; answers its time, rows, chunks, size and sha256.
 */
export async function exportFloor({ db, rows, line, rowsPerChunk, partBytes = 4 * 1024 * 1024, prefix = "bench_floor_blob" }) {
  const chunks = db.collection(`${prefix}_chunks`, DURABLE);
  const blobs = db.collection(`${prefix}s`, DURABLE);
  await chunks.createIndex({ b: 1, n: 1 }, { unique: true, name: "blob_index" });
  await chunks.createIndex({ b: 1, o: 1 }, { name: "blob_offset" });
  const id = `floor_${Date.now()}`;
  const hash = createHash("sha256");
  let lines = [];
  let text = 0;
  let size = 0;
  let n = 0;
  let count = 0;
  const flush = async () => {
    const data = Buffer.from(lines.join(""));
    hash.update(data);
    await chunks.insertOne({ _id: `${id}/${n}`, b: id, n, o: size, data: new Binary(data) });
    size += data.length;
    n++;
    lines = [];
    text = 0;
  };
  const started = performance.now();
  for await (const doc of rows) {
    const next = line(doc);
    lines.push(next);
    text += next.length;
    count++;
    if (lines.length >= rowsPerChunk || text >= partBytes) await flush();
  }
  if (lines.length > 0) await flush();
  const sha256 = hash.digest("hex");
  await blobs.insertOne({ _id: id, state: "sealed", created: new Date(), check_at: new Date(), size, sha256, chunks: n });
  return { ms: performance.now() - started, rows: count, chunks: n, size, sha256 };
}
