import { randomFillSync } from "node:crypto";

// Base62 in ASCII order, so that ids compare byte-wise in the order they encode (as core's ids do).
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const PREFIX = "req_";
const TIME_CHARS = 8; // 62^8 ms ≈ 6,900 years
const RANDOM_CHARS = 16; // ≈ 95 bits

function encodeTime(ms: number): string {
  let out = "";
  for (let i = 0, rest = Math.max(0, Math.floor(ms)); i < TIME_CHARS; i++, rest = Math.floor(rest / 62)) out = ALPHABET[rest % 62] + out;
  return out;
}

/**
 * A new request id: `req_`, the time in milliseconds (8 base62 characters) and 16 random ones (about 95 bits),
 * 24 characters after the prefix. Request ids sort byte-wise by the time they were made, so the request logs
 * (whose ids they are) list newest first by id alone and an id is their cursor.
 */
export function newRequestId(nowMs: number = Date.now()): string {
  let out = PREFIX + encodeTime(nowMs);
  const length = PREFIX.length + TIME_CHARS + RANDOM_CHARS;
  while (out.length < length) {
    if (poolAt === POOL.length) {
      randomFillSync(POOL);
      poolAt = 0;
    }
    const byte = POOL[poolAt++]!;
    // 248 = 4 * 62: rejecting the top bytes keeps every character equally likely.
    if (byte < 248) out += ALPHABET[byte % 62];
  }
  return out;
}

/**
 * Random bytes for request ids, from a pool refilled 4 KiB at a time (as core's ids are): a `randomBytes` call per
 * request was a few per cent of the gateway's busy time. Request ids are public; nothing secret draws from it.
 */
const POOL = Buffer.allocUnsafe(4096);
let poolAt = POOL.length;

/** The least request id made at `ms` or later (a `created` bound of the request logs as a range of ids). */
export function requestIdFloorAt(ms: number): string {
  if (ms >= 62 ** TIME_CHARS) return `${PREFIX}{`; // "{" sorts after every base62 character
  return PREFIX + encodeTime(ms);
}

/** The time a request id was made at, in milliseconds; undefined for a string not shaped like one. */
export function requestIdTime(id: string): number | undefined {
  if (!/^req_[0-9A-Za-z]{24}$/.test(id)) return undefined;
  let ms = 0;
  for (const char of id.slice(PREFIX.length, PREFIX.length + TIME_CHARS)) ms = ms * 62 + ALPHABET.indexOf(char);
  return ms;
}
