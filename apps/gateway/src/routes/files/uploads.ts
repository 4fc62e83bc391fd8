import { FILE_TYPES } from "@rms/proto";
import { ApiError } from "../../errors.js";
import { optionalStringList, requiredString } from "../../parsing/params.js";
import { defineOperation } from "../../engine/operation.js";
import { UPLOAD_ID_PATH, UploadObject } from "./objects.js";

/** Most bytes of an upload in parts: 8 GiB. */
export const UPLOAD_MAX_BYTES = 8 * 1024 ** 3;

/** POST /v1/uploads: 201 with a pending upload, which takes parts for one hour. */
export const createUpload = defineOperation({
  method: "POST",
  path: "/v1/uploads",
  summary: "Create an upload in parts",
  scope: "files:write",
  parameters: {
    purpose: {
      required: true,
      example: "resources_import",
      schema: { type: "string", enum: ["resources_import"], description: "What the file is for (uploads make import files)." },
    },
    filename: { required: true, example: "rows.jsonl", schema: { type: "string", minLength: 1, maxLength: 255, description: "The file's name." } },
    bytes: {
      required: true,
      example: 10485760,
      schema: { type: "integer", minimum: 0, maximum: UPLOAD_MAX_BYTES, description: "The file's total size in bytes, at most 8 GiB." },
    },
    type: { required: true, example: "jsonl", schema: { type: "string", enum: [...FILE_TYPES], description: "The file's type." } },
  },
  success: { status: 201, description: "The pending upload; send its parts, then complete it within the hour.", object: UploadObject },
  errors: ["parameter_missing", "parameter_invalid", "string_too_long", "file_type_invalid", "limit_exceeded"],
  service: "files",
  rpc: "createUpload",
  request({ params, tenant }) {
    const purpose = requiredString(params, "purpose");
    const filename = requiredString(params, "filename");
    const type = requiredString(params, "type");
    const raw = params["bytes"];
    const text = typeof raw === "number" ? String(raw) : typeof raw === "string" ? raw : undefined;
    if (text === undefined) throw new ApiError("parameter_missing", "Missing required param: bytes.", { param: "bytes" });
    if (!/^[0-9]{1,11}$/.test(text) || Number(text) > UPLOAD_MAX_BYTES)
      throw new ApiError("parameter_invalid", `Invalid bytes: an integer from 0 to ${UPLOAD_MAX_BYTES} (8 GiB).`, { param: "bytes" });
    return { tenant, purpose, filename, bytes: BigInt(text), type };
  },
  reply: ({ upload }) => upload,
});

/** GET /v1/uploads/:id */
export const retrieveUpload = defineOperation({
  method: "GET",
  path: "/v1/uploads/:id",
  summary: "Retrieve an upload",
  scope: "files:read",
  pathParameters: UPLOAD_ID_PATH,
  success: { status: 200, description: "The upload.", object: UploadObject },
  errors: ["resource_missing"],
  service: "files",
  rpc: "getUpload",
  request: ({ path, tenant }) => ({ tenant, id: path["id"] ?? "" }),
  reply: ({ upload }) => upload,
});

/** POST /v1/uploads/:id/complete: the parts, in file order, become the file. */
export const completeUpload = defineOperation({
  method: "POST",
  path: "/v1/uploads/:id/complete",
  summary: "Complete an upload",
  scope: "files:write",
  pathParameters: UPLOAD_ID_PATH,
  parameters: {
    part_ids: {
      required: true,
      example: ["part_0000000000000000000000"],
      schema: {
        type: "array",
        minItems: 1,
        maxItems: 10_000,
        items: { type: "string" },
        description: "The parts, in file order; their sizes add up to the upload's `bytes`.",
      },
    },
  },
  // 10,000 part ids fit; a form body is bounded by the parameter limit of forms.
  bodyParameterLimit: 10_001,
  // The completion reads every byte once for the file's sha256 (8 GiB at most).
  timeoutMs: 15 * 60 * 1000,
  success: { status: 200, description: "The upload, `completed`, with its `file`.", object: UploadObject },
  errors: ["resource_missing", "parameter_missing", "parameter_invalid", "upload_incomplete", "state_conflict"],
  service: "files",
  rpc: "completeUpload",
  request({ params, path, tenant }) {
    // One id given without brackets (`part_ids=part_...` in a form) is a list of one.
    const single = params["part_ids"];
    const partIds = typeof single === "string" ? [single] : optionalStringList(params, "part_ids", "part ids");
    if (partIds === undefined || partIds.length === 0) throw new ApiError("parameter_missing", "Missing required param: part_ids.", { param: "part_ids" });
    return { tenant, id: path["id"] ?? "", partIds };
  },
  reply: ({ upload }) => upload,
});

/** POST /v1/uploads/:id/cancel: a pending upload is canceled and its parts reclaimed. */
export const cancelUpload = defineOperation({
  method: "POST",
  path: "/v1/uploads/:id/cancel",
  summary: "Cancel an upload",
  scope: "files:write",
  pathParameters: UPLOAD_ID_PATH,
  success: { status: 200, description: "The upload, `canceled`.", object: UploadObject },
  errors: ["resource_missing", "state_conflict"],
  service: "files",
  rpc: "cancelUpload",
  request: ({ path, tenant }) => ({ tenant, id: path["id"] ?? "" }),
  reply: ({ upload }) => upload,
});
