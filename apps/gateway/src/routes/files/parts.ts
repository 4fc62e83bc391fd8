import type { UploadPartRequestSchema } from "@rms/proto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Request } from "express";
import { ApiError } from "../../errors.js";
import { defineStreamOperation } from "../operation.js";
import { coalesce, sendUpload } from "./keyed-stream.js";
import { UPLOAD_ID_PATH, UploadPartObject } from "./objects.js";
import { UPLOAD_MESSAGE_BYTES } from "./upload-file.js";

/** The most bytes of one part: 64 MiB. */
export const PART_MAX_BYTES = 64 * 1024 * 1024;

/** The raw body, at most `maxBytes` (else 413), failing if the client goes away before its end. */
async function* rawBody(req: Request, maxBytes: number): AsyncGenerator<Uint8Array> {
  let size = 0;
  for await (const piece of req) {
    size += (piece as Buffer).length;
    if (size > maxBytes) throw new ApiError("request_too_large", `A part is at most ${maxBytes} bytes (64 MiB).`);
    yield piece as Buffer;
  }
  if (!req.complete) throw new Error("the client closed the connection before the body ended");
}

/**
 * POST /v1/uploads/:id/parts: one part's raw bytes (`application/octet-stream`, at most 64 MiB), streamed to core.
 * Parts may be sent in any order and at once; a part sent again is another part (complete names the ones to use),
 * but under the same Idempotency-Key, where it answers the first part (core's key protocol, as every POST).
 */
export const uploadPart = defineStreamOperation({
  method: "POST",
  path: "/v1/uploads/:id/parts",
  summary: "Add a part to an upload",
  clientMethod: "addPart",
  scope: "files:write",
  pathParameters: UPLOAD_ID_PATH,
  success: { status: 201, description: "The part, once its bytes are durable.", object: UploadPartObject as never },
  errors: ["resource_missing", "state_conflict", "request_too_large", "unsupported_media_type"],
  stream: {
    streamsBody: true,
    requestBody: {
      required: true,
      description: "The part's raw bytes, at most 64 MiB; the 1 MiB body limit does not apply, and the upload is cut only when nothing arrives for 30 s.",
      content: { "application/octet-stream": { schema: { type: "string", format: "binary", contentMediaType: "application/octet-stream", maxLength: PART_MAX_BYTES } } },
    },
    async handle(input, deps) {
      const { req, core, tenant, path } = input;
      const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
      if (type !== "application/octet-stream") {
        throw new ApiError("unsupported_media_type", `A part's body is application/octet-stream, not '${type.slice(0, 100) || "no content type"}'.`);
      }
      const declared = Number(req.headers["content-length"] ?? Number.NaN);
      if (Number.isFinite(declared) && declared > PART_MAX_BYTES) throw new ApiError("request_too_large", `A part is at most ${PART_MAX_BYTES} bytes (64 MiB).`);
      const first = { tenant, uploadId: path["id"] ?? "" };
      const messages = async function* (): AsyncGenerator<MessageInitShape<typeof UploadPartRequestSchema>> {
        yield { part: { case: "start", value: first } };
        let size = 0n;
        for await (const piece of coalesce(rawBody(req, PART_MAX_BYTES), UPLOAD_MESSAGE_BYTES)) {
          size += BigInt(piece.length);
          yield { part: { case: "data", value: piece } };
        }
        yield { part: { case: "end", value: { size } } };
      };
      await sendUpload(input, "uploadPart", first, async ({ metadata, onTrailers }) => {
        const reply = await core.files.uploadPart(messages(), { metadata, onTrailers, timeoutMs: 60 * 60 * 1000 });
        return { status: 201, body: UploadPartObject.render(reply.part) };
      });
    },
  },
});
