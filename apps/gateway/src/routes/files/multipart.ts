import type { Request } from "express";
import busboy from "busboy";
import type { Readable } from "node:stream";
import { ApiError } from "../../errors.js";
import { continueBody } from "../../transport/expect-continue.js";

/** The fields a multipart body had before its file, and its file as it streams in. */
export interface MultipartFile {
  /** Text fields before the file part, by name. */
  readonly fields: ReadonlyMap<string, string>;
  /** The file part's field name. */
  readonly name: string;
  readonly filename: string | undefined;
  readonly mimeType: string;
  /**
   * The file's bytes; throws (ApiError `request_too_large`) past `maxBytes`, and an Error when the body is cut
   * off or malformed. Ends only once the whole body was read (`after` checks the fields after the file).
   */
  readonly bytes: AsyncIterable<Uint8Array>;
}

const MULTIPART = /^multipart\/form-data\s*;/i;

/** A multipart body whose headers were checked, ready to be read (`open`). */
export interface MultipartBody {
  /** Reads the body up to its file part (sending `100 Continue` first to a client waiting for it). */
  open(): Promise<MultipartFile>;
}

/**
 * Checks a `multipart/form-data` request by its headers alone (415 when it is not multipart, 400 without a
 * boundary), so that a refusal comes before a byte of the body is read; `open` then streams it (busboy): it waits
 * for its file part and answers the text fields before it (Stripe's SDKs, and curl's `-F` in order, send `purpose`
 * first) and the file's bytes as they arrive. Nothing is buffered but what busboy holds. A body without a file part
 * is 400; a second file, or a text field after the file that `after` refuses, fails the bytes (so nothing is kept).
 */
export function multipartBody(req: Request, options: { maxBytes: number; fileField: string; after: (name: string, value: string) => void }): MultipartBody {
  const type = req.headers["content-type"] ?? "";
  if (!MULTIPART.test(type)) {
    throw new ApiError(
      "unsupported_media_type",
      `This route takes multipart/form-data (fields \`purpose\` and \`${options.fileField}\`), not '${type.slice(0, 100) || "no content type"}'.`,
    );
  }
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: req.headers,
      limits: { files: 1, fields: 20, parts: 21, fieldSize: 64 * 1024, fileSize: options.maxBytes + 1 },
      defParamCharset: "utf8",
    });
  } catch {
    throw new ApiError("parameter_invalid", "The multipart body has no boundary.");
  }
  return { open: () => readMultipart(req, parser, options) };
}

function readMultipart(
  req: Request,
  parser: busboy.Busboy,
  options: { maxBytes: number; fileField: string; after: (name: string, value: string) => void },
): Promise<MultipartFile> {
  return new Promise<MultipartFile>((resolve, reject) => {
    const fields = new Map<string, string>();
    let file: Readable | undefined;
    let failure: Error | undefined;
    let finished = false;
    const waiters: (() => void)[] = [];
    const wake = () => {
      for (const waiter of waiters.splice(0)) waiter();
    };
    const fail = (error: Error) => {
      if (failure) return;
      failure = error;
      if (file && !file.readableEnded) file.destroy(error);
      else reject(error);
      wake();
      req.unpipe(parser);
      req.resume();
    };
    parser.on("field", (name, value) => {
      try {
        if (file) options.after(name, value);
        else fields.set(name, value);
      } catch (error) {
        fail(error as Error);
      }
    });
    parser.on("file", (name, stream, info) => {
      if (file) {
        stream.resume();
        fail(new ApiError("parameter_invalid", "The body holds more than one file; send one file per request.", { param: name }));
        return;
      }
      file = stream;
      // Its errors reach the reader through its iteration; this keeps one after the reader finished from going unhandled.
      stream.on("error", () => undefined);
      stream.on("limit", () =>
        fail(new ApiError("request_too_large", `A file is at most ${options.maxBytes} bytes (FILES_MAX_BYTES).`, { param: options.fileField })),
      );
      resolve({ fields, name, filename: info.filename, mimeType: info.mimeType, bytes: fileBytes(stream) });
    });
    parser.on("filesLimit", () => fail(new ApiError("parameter_invalid", "The body holds more than one file; send one file per request.")));
    parser.on("fieldsLimit", () => fail(new ApiError("parameter_invalid", "Too many fields in the multipart body.")));
    parser.on("partsLimit", () => fail(new ApiError("parameter_invalid", "Too many parts in the multipart body.")));
    parser.on("error", (error: Error) => fail(new ApiError("parameter_invalid", `The multipart body could not be read: ${error.message}.`)));
    parser.on("close", () => {
      finished = true;
      if (!file) reject(failure ?? new ApiError("parameter_missing", `Missing required param: ${options.fileField}.`, { param: options.fileField }));
      wake();
    });
    // A client gone before the body ended: the bytes fail, so nothing is kept.
    req.on("close", () => {
      if (!req.complete) fail(new Error("the client closed the connection before the body ended"));
    });
    continueBody(req);
    req.pipe(parser);

    async function* fileBytes(stream: Readable): AsyncGenerator<Uint8Array> {
      for await (const piece of stream) {
        if (failure) throw failure;
        yield piece as Buffer;
      }
      // The file ended; the rest of the body (fields after it) must be read before the upload counts.
      while (!finished && !failure) await new Promise<void>((resolve) => waiters.push(resolve));
      if (failure) throw failure;
    }
  });
}
