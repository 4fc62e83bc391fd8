import { FILE_PURPOSES } from "@rms/proto";
import { optionalInteger, optionalString } from "../../http/params.js";
import { CREATED_RANGE_PARAM, LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, pageParams } from "../../schema/params.js";
import { createdParam } from "../events/filters.js";
import { defineOperation } from "../operation.js";
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
  success: { status: 200, description: "One page of files, newest first.", object: FileListObject },
  errors: ["limit_invalid", "parameter_invalid"],
  service: "files",
  rpc: "listFiles",
  request({ params, tenant }) {
    const limit = optionalInteger(params, "limit", { min: 1, max: LIST_LIMIT_MAX }, "limit_invalid") ?? LIST_LIMIT_DEFAULT;
    return {
      tenant,
      limit,
      startingAfter: optionalString(params, "starting_after") ?? "",
      endingBefore: optionalString(params, "ending_before") ?? "",
      purpose: optionalString(params, "purpose") ?? "",
      created: createdParam(params),
    };
  },
  reply: (page) => ({ items: page.files, hasMore: page.hasMore }),
});
