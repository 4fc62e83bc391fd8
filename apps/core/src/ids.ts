import { randomBytes, randomFillSync } from "node:crypto";
import { ID_SUFFIX_CHARS, type IdPrefix } from "@rms/proto";

/** Every kind of id the service makes (the domains' vocabularies in @rms/proto); nothing else may be minted. */
export { ID_PREFIXES, type IdPrefix } from "@rms/proto";

// Base62 in ASCII order, so that ids compare byte-wise in the order they encode.
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const TIME_CHARS = 8; // 62^8 ms ≈ 6,900 years
const RANDOM_CHARS = ID_SUFFIX_CHARS - TIME_CHARS; // 14: ≈ 83 bits
const SUFFIX = new RegExp(`^[0-9A-Za-z]{${ID_SUFFIX_CHARS}}$`);

/** Base62 text of `count` uniformly random characters, from bytes of its own (secrets use it: no pool shared with ids). */
export function randomBase62(count: number): string {
  let out = "";
  while (out.length < count) {
    for (const byte of randomBytes(count * 2)) {
      // 248 = 4 * 62: rejecting the top bytes keeps every character equally likely.
      if (byte < 248 && out.length < count) out += ALPHABET[byte % 62];
    }
  }
  return out;
}

/**
 * Random bytes for ids, drawn from a pool refilled 4 KiB at a time: one `randomBytes` call per id cost more
 * than the rest of a create's id work (a job of 10,000 items makes 20,000 ids). Ids are public; secrets
 * draw their own bytes (randomBase62).
 */
const ID_POOL = Buffer.allocUnsafe(4096);
let idPoolAt = ID_POOL.length;

function idRandomChars(count: number): string {
  let out = "";
  while (out.length < count) {
    if (idPoolAt === ID_POOL.length) {
      randomFillSync(ID_POOL);
      idPoolAt = 0;
    }
    const byte = ID_POOL[idPoolAt++]!;
    // 248 = 4 * 62: rejecting the top bytes keeps every character equally likely.
    if (byte < 248) out += ALPHABET[byte % 62];
  }
  return out;
}

/** The time part of an id made at `ms` (its first TIME_CHARS characters after the prefix). */
export function encodeTime(ms: number): string {
  let out = "";
  for (let i = 0, rest = ms; i < TIME_CHARS; i++, rest = Math.floor(rest / 62)) out = ALPHABET[rest % 62] + out;
  return out;
}

/**
 * A new id: the prefix, then the creation time in milliseconds and random bits.
 * Ids of one prefix sort (byte-wise) by creation time, so a list ordered by id
 * is newest-first without a second sort key, and an id alone is a cursor.
 */
export function newId(prefix: IdPrefix, nowMs: number = Date.now()): string {
  return `${prefix}_${encodeTime(nowMs)}${idRandomChars(RANDOM_CHARS)}`;
}

/**
 * An id derived from a time and a digest instead of randomness: the same inputs give the same id, so
 * a write repeated after a crash finds its first result. Shaped and ordered like `newId`.
 */
export function idAt(prefix: IdPrefix, ms: number, digest: Uint8Array): string {
  let suffix = "";
  // 248 = 4 * 62, as in randomBase62; 32 digest bytes leave enough after rejection for 14 characters.
  for (const byte of digest) if (byte < 248 && suffix.length < RANDOM_CHARS) suffix += ALPHABET[byte % 62];
  if (suffix.length < RANDOM_CHARS) throw new Error("digest too short for an id");
  return `${prefix}_${encodeTime(ms)}${suffix}`;
}

/**
 * The least id of `prefix` made at `ms` or later: every id made earlier compares below it, every id made
 * then or later at or above it. Beyond the last encodable time it is above every id of the prefix.
 */
export function idFloorAt(prefix: IdPrefix, ms: number): string {
  if (ms >= 62 ** TIME_CHARS) return `${prefix}_{`; // "{" sorts after every base62 character
  return `${prefix}_${encodeTime(Math.max(0, Math.floor(ms)))}`;
}

/** True when `value` is a well-formed id of that prefix (it may or may not exist). */
export function isId(prefix: IdPrefix, value: string): boolean {
  return value.startsWith(`${prefix}_`) && SUFFIX.test(value.slice(prefix.length + 1));
}

/** The creation time (ms) encoded in a well-formed id. */
export function idTimeMs(id: string): number {
  const suffix = id.slice(id.indexOf("_") + 1, id.indexOf("_") + 1 + TIME_CHARS);
  let ms = 0;
  for (const char of suffix) ms = ms * 62 + ALPHABET.indexOf(char);
  return ms;
}
