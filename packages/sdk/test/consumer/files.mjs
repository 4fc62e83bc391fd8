// A 100 MiB file uploaded from its path (in parts), then downloaded twice and hashed: once whole, once while a proxy
// cuts the connection halfway (the SDK resumes with Range).
import { createHash, randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { rms, report } from "./client.mjs";

const SIZE = 100 * 1024 * 1024;
const path = new URL("./big.jsonl", import.meta.url).pathname;
const local = createHash("sha256");
const out = createWriteStream(path);
for (let written = 0; written < SIZE; ) {
  const chunk = randomBytes(Math.min(4 * 1024 * 1024, SIZE - written));
  local.update(chunk);
  written += chunk.length;
  if (!out.write(chunk)) await new Promise((resolve) => out.once("drain", resolve));
}
await new Promise((resolve) => out.end(resolve));
const sha256 = local.digest("hex");

const progress = [];
const file = await rms.files.create({ purpose: "resources_import", file: path }, { onProgress: (sent, total) => progress.push([sent, total]) });

async function download() {
  const hash = createHash("sha256");
  let bytes = 0;
  for await (const chunk of await rms.files.contents(file.id)) {
    hash.update(chunk);
    bytes += chunk.length;
  }
  return { bytes, sha256: hash.digest("hex") };
}
const whole = await download();
const resumed = await download();
report({
  sha256,
  file: { id: file.id, size: file.size, sha256: file.sha256, filename: file.filename, requestId: file.lastResponse.requestId },
  progress: { reports: progress.length, last: progress.at(-1), growing: progress.every((p, i) => i === 0 || p[0] >= progress[i - 1][0]) },
  whole,
  resumed,
});
