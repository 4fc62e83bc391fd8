import type { UploadPartRequestSchema } from "@rms/proto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Request } from "express";
import { ApiError } from "../../errors.js";
import { awaitingContinue, continueBody } from "../../transport/expect-continue.js";
import { defineStreamOperation } from "../../engine/operation.js";
import { UPLOAD_MESSAGE_BYTES, coalesce, sendUpload } from "./upload-stream.js";
import { UPLOAD_ID_PATH, UploadPartObject } from "./objects.js";

/** The most bytes of one part: 64 MiB. */
export const PART_MAX_BYTES = 64 * 1024 * 1024;

/** The raw body, at most `maxBytes` (else 413), failing if the client goes away before its end. */
async function* rawBody(req: Request, maxBytes: number): AsyncGenerator<Uint8Array> {
  continueBody(req);
  let size = 0;
  for await (const piece of req) {
    size += (piece as Buffer).length;
    if (size > maxBytes) throw new ApiError("request_too_large", `A part is at most ${maxBytes} bytes (64 MiB).`);
    yield piece as Buffer;
  }
  if (!req.complete) throw new Error("the client closed the connection before the body ended");
}

/** How long a part's body waits for core to ask for it (a client waiting for `100 Continue`) at most. */
export const GO_AHEAD_WAIT_MS = 5_000;

/**
 * Whether the body is wanted: at once when the client sends it anyway (`holdBack` false); else once core asks for
 * it (`asked`), or GO_AHEAD_WAIT_MS passed; not at all when core answered first (`answered`: a refusal of the start).
 */
function waitForGoAhead(holdBack: boolean) {
  let decide: (wanted: boolean) => void = () => {};
  const wanted = holdBack ? new Promise<boolean>((resolve) => (decide = resolve)) : Promise.resolve(true);
  const timer = holdBack ? setTimeout(() => decide(true), GO_AHEAD_WAIT_MS) : undefined;
  timer?.unref();
  const settle = (value: boolean) => {
    clearTimeout(timer);
    decide(value);
  };
  return { wanted, asked: () => settle(true), answered: () => settle(false) };
}

/**
 * POST /v1/uploads/:id/parts: one part's raw bytes (`application/octet-stream`, at most 64 MiB), streamed to core.
 * Parts may be sent in any order and at once; the same bytes sent again are the part they made (complete names the
 * ones to use); under an Idempotency-Key a repeat answers the first answer (core's key protocol, as every POST).
 */
export const uploadPart = defineStreamOperation({
  method: "POST",
  path: "/v1/uploads/:id/parts",
  summary: "Add a part to an upload",
  clientMethod: "addPart",
  scope: "files:write",
  pathParameters: UPLOAD_ID_PATH,
  success: { status: 201, description: "The part, once its bytes are durable.", object: UploadPartObject as never },
  errors: ["resource_missing", "state_conflict", "limit_exceeded", "request_too_large", "unsupported_media_type"],
  stream: {
    streamsBody: true,
    requestBody: {
      required: true,
      description:
        "The part's raw bytes, at most 64 MiB; the 1 MiB body limit does not apply, and the upload is cut only when nothing arrives for 30 s. " +
        "The same bytes sent again are the same part (its id again); a part that would take the upload's parts past its `bytes`, or the account past " +
        "its storage quota, is 400 `limit_exceeded`.",
      content: {
        "application/octet-stream": { schema: { type: "string", format: "binary", contentMediaType: "application/octet-stream", maxLength: PART_MAX_BYTES } },
      },
    },
    async handle(input, deps) {
      const { req, core, tenant, path } = input;
      const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
      if (type !== "application/octet-stream") {
        throw new ApiError("unsupported_media_type", `A part's body is application/octet-stream, not '${type.slice(0, 100) || "no content type"}'.`);
      }
      const declared = Number(req.headers["content-length"] ?? Number.NaN);
      if (Number.isFinite(declared) && declared > PART_MAX_BYTES)
        throw new ApiError("request_too_large", `A part is at most ${PART_MAX_BYTES} bytes (64 MiB).`);
      // The fingerprint's start is the request's; the length goes to core besides, for its checks before the bytes.
      const first = { tenant, uploadId: path["id"] ?? "" };
      const start = { ...first, ...(Number.isFinite(declared) ? { bytes: BigInt(declared) } : {}) };
      // Core checks the start (the upload pending, the length within it and the account's quota, the key's record)
      // and then asks for the bytes (its response headers): a client waiting for `100 Continue` gets it only then,
      // or the refusal instead. A core that never asks (an earlier release, during a rolling upgrade) is not waited for past GO_AHEAD_WAIT_MS.
      const goAhead = waitForGoAhead(awaitingContinue(req));
      const messages = async function* (): AsyncGenerator<MessageInitShape<typeof UploadPartRequestSchema>> {
        yield { part: { case: "start", value: start } };
        if (!(await goAhead.wanted)) return;
        let size = 0n;
        for await (const piece of coalesce(rawBody(req, PART_MAX_BYTES), UPLOAD_MESSAGE_BYTES)) {
          size += BigInt(piece.length);
          yield { part: { case: "data", value: piece } };
        }
        yield { part: { case: "end", value: { size } } };
      };
      await sendUpload(input, "uploadPart", first, async ({ metadata, onTrailers }) => {
        const call = core.files.uploadPart(messages(), { metadata, onTrailers, onHeaders: goAhead.asked, timeoutMs: 60 * 60 * 1000 });
        const reply = await call.finally(goAhead.answered);
        return { status: 201, body: UploadPartObject.render(reply.part) };
      });
    },
  },
});
