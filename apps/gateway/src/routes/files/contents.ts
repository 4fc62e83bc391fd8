import { FILE_TYPES, filenameForType, type File, type FileType, type ReadFileRequestSchema } from "@rms/proto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { once } from "node:events";
import { ApiError, toApiError } from "../../errors.js";
import { defineStreamOperation } from "../../engine/operation.js";
import { FILE_ID_PATH, FileObject } from "./objects.js";

/** The Content-Type a file is served with. */
export function contentTypeOf(type: string): string {
  return type === "csv" ? "text/csv; charset=utf-8" : "application/x-ndjson";
}

/** A strong ETag from the file's sha256. */
export const etagOf = (sha256: string) => `"${sha256}"`;

/**
 * `attachment; filename="..."` with an ASCII fallback and the UTF-8 name (RFC 6266). The name ends with its type's
 * extension (`filenameForType`): core stores names so, and a file stored before it did is served so too.
 */
export function dispositionOf(file: Pick<File, "filename" | "id" | "type">): string {
  const type = (FILE_TYPES as readonly string[]).includes(file.type) ? (file.type as FileType) : "jsonl";
  const name = filenameForType(file.filename ?? file.id, type);
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, "_");
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

type Range = Pick<MessageInitShape<typeof ReadFileRequestSchema>, "start" | "end" | "suffix">;

/**
 * One byte range of a `Range` header (RFC 9110): `bytes=a-b`, `bytes=a-` or `bytes=-n`. Null (the whole file is
 * served, 200) for no header, a header that is not one well-formed bytes range, or several ranges.
 */
export function rangeOf(header: string | undefined): Range | null {
  if (header === undefined) return null;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match) return null;
  const [, from = "", to = ""] = match;
  if (from === "" && to === "") return null;
  if (from === "") return { suffix: position(to) };
  if (to === "") return { start: position(from) };
  if (BigInt(to) < BigInt(from)) return null;
  return { start: position(from), end: position(to) + 1n };
}

/** Past any file's size, a position means the same as this one: core reads it exactly (int64, a safe JS integer). */
const FARTHEST = BigInt(Number.MAX_SAFE_INTEGER) - 1n;

/**
 * A range's number, held to FARTHEST: a start that far is past every file's end (416), an end that far is the
 * file's end, a suffix that long the whole file (RFC 9110), so the answer is the one the exact number has.
 */
function position(digits: string): bigint {
  const value = BigInt(digits);
  return value > FARTHEST ? FARTHEST : value;
}

/**
 * GET /v1/files/:id/contents: the bytes, streamed from core as the client reads them, with Content-Length,
 * Content-Type, Content-Disposition, an ETag from the sha256 (If-None-Match answers 304) and Accept-Ranges; a
 * `Range` answers 206 with Content-Range (a broken download resumes), one past the end 416.
 */
export const fileContents = defineStreamOperation({
  method: "GET",
  path: "/v1/files/:id/contents",
  summary: "Download a file's contents",
  scope: "files:read",
  pathParameters: FILE_ID_PATH,
  success: { status: 200, description: "The file's bytes.", object: FileObject as never },
  errors: ["resource_missing", "range_not_satisfiable"],
  stream: {
    streamsBody: false,
    successContent: {
      content: {
        "application/x-ndjson": { schema: { type: "string", format: "binary", description: "A JSONL file's bytes." } },
        "text/csv": { schema: { type: "string", format: "binary", description: "A CSV file's bytes." } },
      },
      headers: {
        "Content-Length": { description: "The bytes served.", required: true, schema: { type: "string", pattern: "^[0-9]+$" } },
        ETag: { description: "The file's sha256 in quotes: the same bytes, the same tag.", required: true, schema: { type: "string" } },
        "Content-Disposition": { description: "`attachment` with the file's name.", required: true, schema: { type: "string" } },
        "Accept-Ranges": { description: "`bytes`: a `Range` request is answered 206.", required: true, schema: { type: "string", const: "bytes" } },
      },
      extra: {
        "206": {
          description: "The range asked for (`Range: bytes=a-b`, `bytes=a-`, `bytes=-n`).",
          headers: {
            "Content-Range": { description: "`bytes a-b/size`.", required: true, schema: { type: "string", pattern: "^bytes [0-9]+-[0-9]+/[0-9]+$" } },
          },
        },
        "304": { description: "`If-None-Match` names the file's ETag: not sent again.", headers: {} },
      },
    },
    async handle({ req, res, tenant, path, core, metadata }) {
      const id = path["id"] ?? "";
      const range = rangeOf(typeof req.headers.range === "string" ? req.headers.range : undefined);
      const abort = new AbortController();
      res.on("close", () => abort.abort());
      const messages = core.files.readFile({ tenant, id, ...(range ?? {}) }, { metadata, signal: abort.signal, timeoutMs: 24 * 60 * 60 * 1000 });
      let started = false;
      try {
        for await (const message of messages) {
          if (message.part.case === "head") {
            const { file, start, end } = message.part.value;
            if (!file) throw ApiError.internal();
            const etag = etagOf(file.sha256);
            res.setHeader("ETag", etag);
            res.setHeader("Accept-Ranges", "bytes");
            res.setHeader("Content-Disposition", dispositionOf(file));
            const match = req.headers["if-none-match"];
            if (typeof match === "string" && match.split(",").some((tag) => tag.trim() === etag || tag.trim() === "*")) {
              res.removeHeader("Content-Type");
              res.status(304).end();
              return;
            }
            // A range of an empty file is unsatisfiable (RFC 9110): there is no first byte to serve.
            if (range && end === start)
              throw new ApiError("range_not_satisfiable", "The file is empty: no range of it can be served.", {
                headers: { "Content-Range": `bytes */${file.size}` },
              });
            res.setHeader("Content-Type", contentTypeOf(file.type));
            res.setHeader("Content-Length", String(end - start));
            if (range) res.setHeader("Content-Range", `bytes ${start}-${end - 1n}/${file.size}`);
            res.status(range ? 206 : 200);
            res.flushHeaders();
            started = true;
            if (end === start) break;
            continue;
          }
          if (message.part.case === "data" && !res.write(message.part.value)) await once(res, "drain", { signal: abort.signal });
        }
      } catch (error) {
        if (started) {
          // The answer is under way: it cannot become an error; the connection is cut, so the client sees a short body.
          res.destroy();
          return;
        }
        const apiError = toApiError(error);
        if (apiError.code === "range_not_satisfiable" && apiError.headers["Content-Range"] === undefined) {
          const { file } = await core.files.getFile({ tenant, id }, { metadata });
          throw new ApiError("range_not_satisfiable", apiError.message, { headers: { "Content-Range": `bytes */${file?.size ?? 0n}` } });
        }
        throw error;
      }
      if (started) res.end();
    },
  },
});
