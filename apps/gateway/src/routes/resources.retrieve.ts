import type { Operation } from "./operation.js";
import { renderResource } from "./resources.render.js";

/** GET /v1/resources/:id */
export const retrieveResource: Operation = {
  method: "GET",
  path: "/v1/resources/:id",
  params: [],
  summary: "Retrieve a resource",
  scope: "resources:read",
  async handle({ path, tenant, core, call }) {
    const { resource } = await core.resources.getResource({ tenant, id: path["id"] ?? "" }, call);
    return { status: 200, body: renderResource(resource) };
  },
};
