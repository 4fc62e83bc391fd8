import { platform } from "../platform.js";
import type { RequestOptions } from "../options.js";
import { newIdempotencyKey, type RequestSender } from "../request.js";
import type { RMSResponse } from "../response.js";
import type { Body, MultipartBody, Schemas } from "../types.js";

/**
 * A file's bytes as `files.create` takes them: bytes, a Blob (a browser's File), a web ReadableStream or a Node
 * stream (any async iterable of bytes), or, on Node, a path (read from disk as it is sent).
 */
export type FileInput = Uint8Array | ArrayBuffer | Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array> | string;

export interface FileCreateParams {
  /** What the file is for: clients upload `resources_import` files. */
  readonly purpose: MultipartBody<"createFile">["purpose"];
  readonly file: FileInput;
  /** The file's name; its extension gives its type (`.jsonl`, `.ndjson`, `.csv`). Default: the path's or the File's name. */
  readonly filename?: string;
  /** The type, when the name does not say it. */
  readonly type?: Body<"createUpload">["type"];
  /** A stream's size in bytes, when known: a stream over 64 MiB goes up in parts, which need the total first. */
  readonly size?: number;
}

export interface UploadOptions extends RequestOptions {
  /** Told the bytes sent so far and the total, as parts (or, on Node, the bytes of a request) are sent. */
  readonly onProgress?: (sent: number, total: number) => void;
}

/** The most bytes of one `POST /v1/files`, and of one part: 64 MiB (the API's limit of a part). */
export const SINGLE_REQUEST_MAX_BYTES = 64 * 1024 * 1024;
/** The size of the parts a larger file is cut into. */
export const PART_BYTES = 16 * 1024 * 1024;
/** Parts of a Blob or a path sent at once. */
export const PARTS_IN_FLIGHT = 3;

const EXTENSION_TYPES: Readonly<Record<string, { type: "jsonl" | "csv"; mime: string }>> = {
  jsonl: { type: "jsonl", mime: "application/x-ndjson" },
  ndjson: { type: "jsonl", mime: "application/x-ndjson" },
  csv: { type: "csv", mime: "text/csv" },
};

function typeOf(filename: string, given: "jsonl" | "csv" | undefined) {
  const byName = EXTENSION_TYPES[/\.([A-Za-z0-9]+)$/.exec(filename)?.[1]?.toLowerCase() ?? ""];
  if (given) return { type: given, mime: given === "csv" ? "text/csv" : "application/x-ndjson" };
  return byName;
}

function isAsyncIterable(value: unknown): value is AsyncIterable<Uint8Array> {
  return typeof value === "object" && value !== null && Symbol.asyncIterator in value;
}

/** The bytes of a web stream or a Node stream, chunk by chunk. */
async function* chunksOf(input: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  if (isAsyncIterable(input)) {
    for await (const chunk of input) yield typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk;
    return;
  }
  const reader = input.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

/** Reads up to `max` bytes of a stream: the chunks, and whether the stream ended within them. */
async function readUpTo(chunks: AsyncIterator<Uint8Array>, max: number): Promise<{ parts: Uint8Array[]; size: number; ended: boolean }> {
  const parts: Uint8Array[] = [];
  let size = 0;
  while (size < max) {
    const { done, value } = await chunks.next();
    if (done) return { parts, size, ended: true };
    parts.push(value);
    size += value.length;
  }
  return { parts, size, ended: false };
}

/** A Blob of chunks that may run past `max`: the first `max` bytes, and what is left over for the next one. */
function cut(parts: Uint8Array[], max: number): { blob: Blob; rest: Uint8Array[] } {
  const kept: Uint8Array[] = [];
  const rest: Uint8Array[] = [];
  let size = 0;
  for (const part of parts) {
    if (size + part.length <= max) kept.push(part);
    else if (size < max) {
      kept.push(part.subarray(0, max - size));
      rest.push(part.subarray(max - size));
    } else rest.push(part);
    size += part.length;
  }
  return { blob: new Blob(kept as BlobPart[]), rest };
}

const quoteName = (name: string) => name.replace(/["\r\n\\]/g, (c) => encodeURIComponent(c));

/** The `multipart/form-data` body Stripe's SDKs send: `purpose` first (a refusal comes before the bytes), then the file. */
function multipart(purpose: string, filename: string, mime: string, file: Blob): { body: Blob; contentType: string } {
  const boundary = `rms-sdk-${newIdempotencyKey().slice(4)}`;
  const head =
    `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\n${purpose}\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${quoteName(filename)}"\r\nContent-Type: ${mime}\r\n\r\n`;
  return { body: new Blob([head, file, `\r\n--${boundary}--\r\n`]), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** Keys derived from the call's: a retry of the whole upload under the same key replays every step. */
function stepKeys(options: UploadOptions | undefined) {
  const base = options?.idempotencyKey ?? newIdempotencyKey();
  const derived = (step: string) => (base.length + step.length < 250 ? `${base}:${step}` : newIdempotencyKey());
  return { create: base, part: (index: number) => derived(`part:${index}`), complete: derived("complete") };
}

/** Progress that only grows: the bytes of finished parts plus what the transport says of those in flight. */
function progressOf(total: number, report: ((sent: number, total: number) => void) | undefined) {
  let done = 0;
  let shown = -1;
  const inFlight = new Map<number, number>();
  const show = () => {
    let sent = done;
    for (const bytes of inFlight.values()) sent += bytes;
    sent = Math.min(sent, total);
    if (sent > shown) {
      shown = sent;
      report?.(sent, total);
    }
  };
  return {
    sending: (key: number) => (bytes: number) => {
      inFlight.set(key, Math.max(inFlight.get(key) ?? 0, bytes));
      show();
    },
    finished(key: number, bytes: number) {
      inFlight.delete(key);
      done += bytes;
      show();
    },
  };
}

type FileAnswer = RMSResponse<Schemas["File"]>;

export class FileUploader {
  constructor(private readonly sender: RequestSender) {}

  /** `files.create`: one `POST /v1/files` up to 64 MiB, else `/v1/uploads` in parts (each retried alone), then the file. */
  async create(params: FileCreateParams, options?: UploadOptions): Promise<FileAnswer> {
    const filename = params.filename ?? (typeof params.file === "string" ? params.file.split(/[\\/]/).at(-1) : (params.file as { name?: unknown }).name);
    if (typeof filename !== "string" || filename === "") throw new TypeError("files.create: give `filename` (its extension, .jsonl or .csv, gives the type)");
    const kind = typeOf(filename, params.type);
    const input = params.file;
    let blob: Blob | undefined;
    if (typeof input === "string") {
      const open = platform().openFile;
      if (!open) throw new TypeError("files.create: a path is read on Node only; pass bytes, a Blob or a stream");
      blob = await open(input);
    } else if (input instanceof Uint8Array || input instanceof ArrayBuffer) blob = new Blob([input as BlobPart]);
    else if (typeof Blob !== "undefined" && input instanceof Blob) blob = input;
    if (blob) {
      if (blob.size <= SINGLE_REQUEST_MAX_BYTES) return this.single(params.purpose, filename, kind?.mime ?? "application/octet-stream", blob, options);
      const source = blob;
      return this.inParts(
        params,
        filename,
        kind?.type,
        blob.size,
        options,
        async function* () {
          for (let at = 0; at < source.size; at += PART_BYTES) yield source.slice(at, Math.min(at + PART_BYTES, source.size));
        },
        PARTS_IN_FLIGHT,
      );
    }
    // A stream: read once, so what is sent (and sent again on a retry) is held per request, at most 64 MiB.
    const chunks = chunksOf(input as ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
    if (params.size === undefined || params.size <= SINGLE_REQUEST_MAX_BYTES) {
      const head = await readUpTo(chunks, SINGLE_REQUEST_MAX_BYTES + 1);
      if (head.ended) return this.single(params.purpose, filename, kind?.mime ?? "application/octet-stream", new Blob(head.parts as BlobPart[]), options);
      await chunks.return?.(undefined);
      throw new TypeError("files.create: a stream over 64 MiB goes up in parts, which need its total size first: give `size`");
    }
    return this.inParts(
      params,
      filename,
      kind?.type,
      params.size,
      options,
      async function* () {
        let carried: Uint8Array[] = [];
        for (;;) {
          const carriedBytes = carried.reduce((n, c) => n + c.length, 0);
          const more = await readUpTo(chunks, PART_BYTES - carriedBytes);
          const { blob: part, rest } = cut([...carried, ...more.parts], PART_BYTES);
          carried = rest;
          if (part.size > 0) yield part;
          if (more.ended && carried.length === 0) return;
        }
      },
      1,
    );
  }

  /** `uploads.addPart`: one part's bytes (at most 64 MiB), retried alone. */
  addPart(uploadId: string, part: Blob | Uint8Array, options?: RequestOptions): Promise<RMSResponse<Schemas["UploadPart"]>> {
    const blob = part instanceof Uint8Array ? new Blob([part as BlobPart]) : part;
    return this.sender.json({
      method: "POST",
      path: `/v1/uploads/${encodeURIComponent(uploadId)}/parts`,
      body: () => blob,
      headers: { "Content-Type": "application/octet-stream" },
      options,
    });
  }

  private async single(purpose: string, filename: string, mime: string, file: Blob, options: UploadOptions | undefined): Promise<FileAnswer> {
    const { body, contentType } = multipart(purpose, filename, mime, file);
    const progress = progressOf(file.size, options?.onProgress);
    const head = body.size - file.size;
    const answer = await this.sender.json<Schemas["File"]>({
      method: "POST",
      path: "/v1/files",
      body: () => body,
      headers: { "Content-Type": contentType },
      options,
      onBodyProgress: (sent) => progress.sending(0)(Math.max(0, sent - head)),
    });
    progress.finished(0, file.size);
    return answer;
  }

  private async inParts(
    params: FileCreateParams,
    filename: string,
    type: "jsonl" | "csv" | undefined,
    size: number,
    options: UploadOptions | undefined,
    parts: () => AsyncGenerator<Blob>,
    inFlight: number,
  ): Promise<FileAnswer> {
    if (!type) throw new TypeError("files.create: give `type` (jsonl or csv), or a filename ending in .jsonl, .ndjson or .csv");
    const keys = stepKeys(options);
    const upload = await this.sender.json<Schemas["Upload"]>({
      method: "POST",
      path: "/v1/uploads",
      json: { purpose: params.purpose, filename, bytes: size, type },
      options: { ...options, idempotencyKey: keys.create },
    });
    const path = `/v1/uploads/${encodeURIComponent(upload.id)}`;
    const progress = progressOf(size, options?.onProgress);
    try {
      const ids: string[] = [];
      const running = new Set<Promise<void>>();
      let index = 0;
      let failure: unknown;
      for await (const part of parts()) {
        const at = index++;
        const sent = this.sender
          .json<Schemas["UploadPart"]>({
            method: "POST",
            path: `${path}/parts`,
            body: () => part,
            headers: { "Content-Type": "application/octet-stream" },
            options: { ...options, idempotencyKey: keys.part(at) },
            onBodyProgress: progress.sending(at),
          })
          .then((answer) => {
            ids[at] = answer.id;
            progress.finished(at, part.size);
          })
          .catch((error: unknown) => {
            failure ??= error;
          })
          .finally(() => running.delete(sent));
        running.add(sent);
        if (running.size >= inFlight) await Promise.race(running);
        if (failure !== undefined) break;
      }
      await Promise.all(running);
      if (failure !== undefined) throw failure;
      const completed = await this.sender.json<Schemas["Upload"]>({
        method: "POST",
        path: `${path}/complete`,
        json: { part_ids: ids },
        options: { ...options, idempotencyKey: keys.complete },
      });
      if (!completed.file) throw new TypeError(`uploads: ${upload.id} completed without a file`);
      return Object.defineProperty(completed.file, "lastResponse", { value: completed.lastResponse, enumerable: false }) as FileAnswer;
    } catch (error) {
      // Its parts are reclaimed now rather than when the upload expires.
      await this.sender
        .json({ method: "POST", path: `${path}/cancel`, options: { ...options, idempotencyKey: undefined, maxNetworkRetries: 0 } })
        .catch(() => {});
      throw error;
    }
  }
}
