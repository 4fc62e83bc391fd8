import { isUtf8 } from "node:buffer";
import { FileInvalidError } from "./model.js";

/**
 * Checks that a byte stream is UTF-8, chunk by chunk: a chunk's incomplete last sequence (cut by the chunk
 * boundary) is carried into the next check. Throws FileInvalidError at the first bytes that are not.
 */
export class Utf8Check {
  private carry: Buffer = Buffer.alloc(0);
  private checked: number;

  constructor(start: number) {
    this.checked = start;
  }

  push(chunk: Buffer): void {
    const bytes = this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk;
    const cut = completeLength(bytes);
    if (!isUtf8(bytes.subarray(0, cut))) this.fail();
    this.checked += cut;
    this.carry = Buffer.from(bytes.subarray(cut));
  }

  /** At the end of the file: an incomplete last sequence is not UTF-8. */
  end(): void {
    if (this.carry.length > 0) this.fail();
  }

  private fail(): never {
    throw new FileInvalidError(`The file is not UTF-8 text (invalid bytes after byte ${this.checked}).`);
  }
}

/** The length of `bytes` without a trailing multi-byte sequence that the next chunk may complete. */
function completeLength(bytes: Buffer): number {
  const n = bytes.length;
  for (let back = 1; back <= Math.min(3, n); back++) {
    const b = bytes[n - back]!;
    if ((b & 0xc0) === 0x80) continue; // a continuation byte: look further back for its lead
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need > back ? n - back : n;
  }
  return n;
}
