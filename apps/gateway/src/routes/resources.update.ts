import { optionalEnum, optionalMetadata, optionalString } from "../http/params.js";
import type { Operation } from "./operation.js";
import { STATUS_NAMES, renderResource, statusToProto } from "./resources.render.js";

/** POST /v1/resources/:id: merges the given fields, 200 with the full resource. */
export const updateResource: Operation = {
  method: "POST",
  path: "/v1/resources/:id",
  params: ["name", "status", "metadata"],
  summary: "Update a resource",
  scope: "resources:write",
  async handle({ params, path, tenant, core, call }) {
    const name = optionalString(params, "name");
    const status = optionalEnum(params, "status", STATUS_NAMES);
    const metadata = optionalMetadata(params);
    const { resource } = await core.resources.updateResource(
      {
        tenant,
        id: path["id"] ?? "",
        ...(name !== undefined ? { name } : {}),
        status: statusToProto(status),
        metadata: metadata?.entries ?? [],
        clearMetadata: metadata?.clear ?? false,
      },
      call,
    );
    return { status: 200, body: renderResource(resource) };
  },
};
