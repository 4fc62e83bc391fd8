import { defineOperation } from "../../engine/operation.js";
import { DeletedFileObject, FILE_ID_PATH, FileObject } from "./objects.js";

/** GET /v1/files/:id */
export const retrieveFile = defineOperation({
  method: "GET",
  path: "/v1/files/:id",
  summary: "Retrieve a file",
  scope: "files:read",
  pathParameters: FILE_ID_PATH,
  success: { status: 200, description: "The file.", object: FileObject },
  errors: ["resource_missing"],
  service: "files",
  rpc: "getFile",
  request: ({ path, tenant }) => ({ tenant, id: path["id"] ?? "" }),
  reply: ({ file }) => file,
});

/** DELETE /v1/files/:id: 409 while an unfinished job uses the file. */
export const deleteFile = defineOperation({
  method: "DELETE",
  path: "/v1/files/:id",
  summary: "Delete a file",
  scope: "files:write",
  pathParameters: FILE_ID_PATH,
  success: { status: 200, description: "The deletion result; the file's bytes are reclaimed.", object: DeletedFileObject },
  errors: ["resource_missing", "state_conflict"],
  service: "files",
  rpc: "deleteFile",
  request: ({ path, tenant }) => ({ tenant, id: path["id"] ?? "" }),
  reply: ({ id }) => ({ id }),
});
