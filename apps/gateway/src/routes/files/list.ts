import { FILE_PURPOSES } from "@rms/proto";
import { optionalString } from "../../parsing/params.js";
import { CREATED_RANGE_PARAM, createdParam, pageParams, pageRequest } from "../../schema/params.js";
import { defineOperation } from "../../engine/operation.js";
import { FileListObject } from "./objects.js";

/** GET /v1/files: one page, newest first, in the list envelope (expired files are gone). */
export const listFiles = defineOperation({
  method: "GET",
  path: "/v1/files",
  summary: "List files",
  scope: "files:read",
  parameters: {
    ...pageParams("file", "file"),
    purpose: { example: "resources_import", schema: { type: "string", enum: [...FILE_PURPOSES], description: "Only files of this purpose." } },
    created: CREATED_RANGE_PARAM,
  },
  success: {
    status: 200,
    description: "One page of files, newest first, with the bytes the account stores in this mode (`used_bytes`) and may store (`quota_bytes`).",
    object: FileListObject,
  },
  errors: ["limit_invalid", "parameter_invalid"],
  service: "files",
  rpc: "listFiles",
  request({ params, tenant }) {
    return {
      tenant,
      ...pageRequest(params),
      purpose: optionalString(params, "purpose") ?? "",
      created: createdParam(params),
    };
  },
  reply: (page) => ({ items: page.files, hasMore: page.hasMore, usage: page.usage }),
});
