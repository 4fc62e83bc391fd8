import { rejectUnknown } from "../http/params.js";
import type { Operation } from "./operation.js";
import { renderResource } from "./resources.render.js";

/** GET /v1/resources/:id */
export const retrieveResource: Operation = {
  method: "GET",
  path: "/v1/resources/:id",
  params: [],
  summary: "Retrieve a resource",
  scope: "resources:read",
  async handle({ params, path, tenant, core, call }) {
    rejectUnknown(params, retrieveResource.params);
    const { resource } = await core.resources.getResource({ tenant, id: path["id"] ?? "" }, call);
    return { status: 200, body: renderResource(resource) };
  },
};
