import { createHash, type Hash } from "node:crypto";
import { errors } from "../errors.js";
import type { KeyedStream } from "./idempotent.js";

/** What an upload stream's end says: how many bytes were sent, and fields known only after them (a file's purpose). */
export interface UploadEnd {
  readonly size: bigint;
  readonly purpose?: string;
}

/** The messages of a client-streaming upload (files.proto): one `start`, its bytes as `data`, then one `end`. */
export interface UploadMessage<Start> {
  readonly part:
    | { readonly case: "start"; readonly value: Start }
    | { readonly case: "data"; readonly value: Uint8Array }
    | { readonly case: "end"; readonly value: UploadEnd }
    | { readonly case: undefined; readonly value?: undefined };
}

/** How often (ms of flowing bytes) a keyed upload renews its lock: a third of the lock (idempotent.ts). */
const PROGRESS_EVERY_MS = 10_000;

/**
 * One upload stream as a declared upload reads it: its start, then its bytes, which end with the stream's own `end`
 * message whose size must be what arrived. A stream that stops without it was cut off (grpc-js half-closes a
 * cancelled call's stream): the bytes then throw, so the store keeps nothing. Under an Idempotency-Key the bytes are
 * hashed as they pass, and the digest of that sha256 and the end message completes the request's fingerprint.
 */
export class UploadStream<Start> implements KeyedStream {
  onProgress: (() => Promise<void>) | null = null;
  /** Told once, when the bytes are first asked for: the start was accepted (the caller's go-ahead to send them). */
  onReady: (() => void) | null = null;
  private readonly hash: Hash | null;
  private received = 0n;
  private digest: string | null = null;
  private reading = false;
  private lastProgress = Date.now();

  private constructor(
    private readonly iterator: AsyncIterator<UploadMessage<Start>>,
    readonly first: UploadMessage<Start>,
    readonly start: Start,
    private readonly serialize: ((message: UploadMessage<Start>) => Uint8Array) | null,
  ) {
    this.hash = serialize === null ? null : createHash("sha256");
  }

  /**
   * Reads the stream's first message, which must be its `start`. `serialize` (the method's request message to
   * bytes) is given when the upload runs under a key: its bytes are then hashed and its end digested.
   */
  static async open<Start>(
    requests: AsyncIterable<UploadMessage<Start>>,
    serialize: ((message: UploadMessage<Start>) => Uint8Array) | null,
  ): Promise<UploadStream<Start>> {
    const iterator = requests[Symbol.asyncIterator]();
    const first = await iterator.next();
    if (first.done || first.value.part.case !== "start") throw errors.invalid("parameter_missing", "An upload stream begins with its start message.");
    return new UploadStream(iterator, first.value, first.value.part.value, serialize);
  }

  /** The bytes, read once; `onEnd` checks what the end carries, and failing it fails the bytes (nothing kept). */
  async *bytes(onEnd?: (end: UploadEnd) => void): AsyncGenerator<Uint8Array> {
    if (this.reading) throw new Error("an upload's bytes are read once");
    this.reading = true;
    this.onReady?.();
    for (;;) {
      const next = await this.iterator.next();
      if (next.done) throw errors.unavailable();
      const part = next.value.part;
      if (part.case === "data") {
        this.received += BigInt(part.value.length);
        this.hash?.update(part.value);
        if (this.onProgress && Date.now() - this.lastProgress >= PROGRESS_EVERY_MS) {
          this.lastProgress = Date.now();
          await this.onProgress();
        }
        yield part.value;
      } else if (part.case === "end") {
        if (part.value.size !== this.received)
          throw errors.invalid("parameter_invalid", `The upload's end says ${part.value.size} bytes; ${this.received} arrived.`);
        if (this.hash && this.serialize) {
          this.digest = createHash("sha256").update(this.hash.digest("hex")).update(this.serialize(next.value)).digest("base64url");
        }
        onEnd?.(part.value);
        await this.onProgress?.();
        return;
      } else throw errors.invalid("parameter_invalid", "An upload stream has one start message, then data, then its end.");
    }
  }

  content(): string | null {
    return this.digest;
  }

  async drain(): Promise<string> {
    for await (const _ of this.bytes());
    // bytes() digests when hashing, and a drained stream is always a keyed one.
    if (this.digest === null) throw new Error("an upload drained without a digest");
    return this.digest;
  }
}
