import { FILE_TYPES, type FileType, type UploadFileRequestSchema } from "@rms/proto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { ApiError } from "../../errors.js";
import { defineStreamOperation, type StreamInput } from "../../engine/operation.js";
import { UPLOAD_MESSAGE_BYTES, admitUpload, coalesce, sendUpload } from "./upload-stream.js";
import { multipartBody } from "./multipart.js";
import { FileObject } from "./objects.js";

/** A file's type from its name's extension, else from the part's content type; null when neither says. */
export function fileTypeOf(filename: string, mimeType: string): FileType | null {
  const extension = /\.([A-Za-z0-9]+)$/.exec(filename)?.[1]?.toLowerCase();
  if (extension === "jsonl" || extension === "ndjson") return "jsonl";
  if (extension === "csv") return "csv";
  const mime = mimeType.split(";")[0]!.trim().toLowerCase();
  if (mime === "application/x-ndjson" || mime === "application/jsonl" || mime === "application/x-jsonlines") return "jsonl";
  if (mime === "text/csv") return "csv";
  return null;
}

const PURPOSE = "purpose";
const FILE = "file";

/** The purpose the body gave: before the file (then known at the start), or after it (known once the bytes ended). */
function purposeGiven(before: string | undefined, after: ReadonlyMap<string, string>): string {
  const purpose = before ?? after.get(PURPOSE);
  if (purpose === undefined || purpose === "") throw new ApiError("parameter_missing", "Missing required param: purpose.", { param: PURPOSE });
  return purpose;
}

/** The upload's start message: what is known before the bytes (core's fingerprint of the request begins with it). */
function startMessage(input: StreamInput, start: { purpose: string | undefined; filename: string; type: FileType; maxBytes: number }) {
  return { tenant: input.tenant, purpose: start.purpose ?? "", filename: start.filename, type: start.type, maxBytes: BigInt(start.maxBytes) };
}

function uploadMessages(
  first: ReturnType<typeof startMessage>,
  purposeBefore: string | undefined,
  bytes: AsyncIterable<Uint8Array>,
  after: ReadonlyMap<string, string>,
) {
  return (async function* (): AsyncGenerator<MessageInitShape<typeof UploadFileRequestSchema>> {
    yield { part: { case: "start", value: first } };
    let size = 0n;
    for await (const piece of coalesce(bytes, UPLOAD_MESSAGE_BYTES)) {
      size += BigInt(piece.length);
      yield { part: { case: "data", value: piece } };
    }
    // A purpose sent after the file goes with the end (the bytes are in core by then, and go if it is refused).
    const purpose = purposeGiven(purposeBefore, after);
    yield { part: { case: "end", value: { size, ...(purposeBefore === undefined ? { purpose } : {}) } } };
  })();
}

/**
 * POST /v1/files: a `multipart/form-data` body with `purpose` and one `file` part with a filename, as Stripe's SDKs
 * send it; the bytes stream to core as they arrive (no process holds the file), and the 201 comes once every byte
 * is durable. Past FILES_MAX_BYTES: 413 and nothing kept; a client that goes away mid-upload leaves nothing.
 */
export const uploadFile = defineStreamOperation({
  method: "POST",
  path: "/v1/files",
  summary: "Upload a file",
  scope: "files:write",
  success: { status: 201, description: "The file, once every byte is durable.", object: FileObject as never },
  errors: [
    "parameter_missing",
    "parameter_invalid",
    "parameter_unknown",
    "file_type_invalid",
    "string_too_long",
    "limit_exceeded",
    "request_too_large",
    "unsupported_media_type",
  ],
  stream: {
    streamsBody: true,
    requestBody: {
      required: true,
      description:
        "`multipart/form-data`, as Stripe's SDKs send it: the field `purpose` and one part `file` with a filename (`purpose` first lets a refusal come " +
        "before the bytes are sent). " +
        "Its type comes from the extension (`.jsonl`, `.ndjson`, `.csv`) or the part's content type (`application/x-ndjson`, `application/jsonl`, " +
        "`text/csv`). " +
        "At most FILES_MAX_BYTES (512 MiB by default); the 1 MiB body limit does not apply, and the upload is cut only when nothing arrives for 30 s.",
      content: {
        "multipart/form-data": {
          schema: {
            type: "object",
            additionalProperties: false,
            required: [PURPOSE, FILE],
            properties: {
              [PURPOSE]: { type: "string", enum: ["resources_import"], description: "What the file is for: clients upload import files." },
              // `format: binary` as well as 3.1's `contentMediaType`: generators type it as bytes (a Blob), not as text.
              [FILE]: {
                type: "string",
                format: "binary",
                contentMediaType: "application/octet-stream",
                description: "The file's bytes, in a part with a filename.",
              },
            },
          },
          // The file's type comes from its name's extension or a JSONL/CSV content type; application/octet-stream needs a
          // .jsonl, .ndjson or .csv name (listed so that generic clients, which cannot encode the others, can send one).
          encoding: { [FILE]: { contentType: "application/x-ndjson, application/jsonl, text/csv, application/octet-stream" } },
        },
      },
    },
    async handle(input, deps) {
      const { req, core } = input;
      const maxBytes = deps.filesMaxBytes;
      const declared = Number(req.headers["content-length"] ?? Number.NaN);
      // A body whose length says it is too large is refused before a byte is read (the multipart framing adds a few hundred bytes).
      if (Number.isFinite(declared) && declared > maxBytes + 64 * 1024)
        throw new ApiError("request_too_large", `A file is at most ${maxBytes} bytes (FILES_MAX_BYTES).`, { param: FILE });
      // Fields after the file: `purpose` once (when it did not come before), nothing else.
      const trailing = new Map<string, string>();
      let purposeBefore: string | undefined;
      const after = (name: string, value: string) => {
        if (name === PURPOSE && purposeBefore === undefined && !trailing.has(PURPOSE)) {
          trailing.set(PURPOSE, value);
          return;
        }
        if (name === PURPOSE) throw new ApiError("parameter_invalid", "`purpose` is given twice.", { param: PURPOSE });
        throw new ApiError("parameter_unknown", `Received unknown parameter: ${name.slice(0, 100)}`, { param: name.slice(0, 100) });
      };
      const form = multipartBody(req, { maxBytes, fileField: FILE, after });
      // Within the account's quota, asked before a byte of the body is read (and before `100 Continue`); core asks
      // again when the bytes come, and cuts a file that passes it on the way.
      await admitUpload(input);
      const body = await form.open();
      // Refused before a byte went to core: the rest of the body is not read (the answer closes the connection).
      const refuse = (error: ApiError): never => {
        throw error;
      };
      for (const name of body.fields.keys())
        if (name !== PURPOSE) refuse(new ApiError("parameter_unknown", `Received unknown parameter: ${name.slice(0, 100)}`, { param: name.slice(0, 100) }));
      if (body.name !== FILE)
        refuse(
          new ApiError("parameter_unknown", `Received unknown parameter: ${body.name.slice(0, 100)}; the file part is named \`file\`.`, {
            param: body.name.slice(0, 100),
          }),
        );
      purposeBefore = body.fields.get(PURPOSE);
      if (purposeBefore === "") refuse(new ApiError("parameter_missing", "Missing required param: purpose.", { param: PURPOSE }));
      if (!body.filename) refuse(new ApiError("parameter_invalid", "The file part has no filename.", { param: FILE }));
      const filename = body.filename ?? "";
      if ([...filename].length > 255) refuse(new ApiError("string_too_long", "The filename is at most 255 characters.", { param: FILE }));
      const type = fileTypeOf(filename, body.mimeType);
      if (type === null) {
        refuse(
          new ApiError(
            "file_type_invalid",
            `The file's type is one of ${FILE_TYPES.join(", ")}: name it .jsonl, .ndjson or .csv, or send it as application/x-ndjson or text/csv.`,
            { param: FILE },
          ),
        );
      }
      const first = startMessage(input, { purpose: purposeBefore, filename, type: type as FileType, maxBytes });
      await sendUpload(input, "uploadFile", first, async ({ metadata, onTrailers }) => {
        const reply = await core.files.uploadFile(uploadMessages(first, purposeBefore, body.bytes, trailing), {
          metadata,
          onTrailers,
          timeoutMs: 24 * 60 * 60 * 1000,
        });
        return { status: 201, body: FileObject.render(reply.file) };
      });
    },
  },
});
