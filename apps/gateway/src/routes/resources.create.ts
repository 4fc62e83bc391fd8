import { optionalEnum, optionalMetadata, requiredString } from "../http/params.js";
import type { Operation } from "./operation.js";
import { STATUS_NAMES, renderResource, statusToProto } from "./resources.render.js";

/** POST /v1/resources: 201 with the new resource. */
export const createResource: Operation = {
  method: "POST",
  path: "/v1/resources",
  params: ["name", "status", "metadata"],
  summary: "Create a resource",
  scope: "resources:write",
  async handle({ params, tenant, core, call }) {
    const name = requiredString(params, "name");
    const status = optionalEnum(params, "status", STATUS_NAMES);
    const metadata = optionalMetadata(params);
    const { resource } = await core.resources.createResource(
      { tenant, name, status: statusToProto(status), metadata: metadata?.entries ?? [] },
      call,
    );
    return { status: 201, body: renderResource(resource) };
  },
};
