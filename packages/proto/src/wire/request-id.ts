import { randomBytes } from "node:crypto";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const PREFIX = "req_";
const RANDOM_CHARS = 24;

/** A new request id: `req_` and 24 random base62 characters (about 143 bits). */
export function newRequestId(): string {
  let out = PREFIX;
  const length = PREFIX.length + RANDOM_CHARS;
  while (out.length < length) {
    for (const byte of randomBytes(32)) {
      // 248 = 4 * 62: rejecting the top bytes keeps every character equally likely.
      if (byte < 248 && out.length < length) out += ALPHABET[byte % 62];
    }
  }
  return out;
}
