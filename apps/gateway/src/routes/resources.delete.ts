import type { Operation } from "./operation.js";

/** DELETE /v1/resources/:id: 200 with the deletion result. */
export const deleteResource: Operation = {
  method: "DELETE",
  path: "/v1/resources/:id",
  params: [],
  summary: "Delete a resource",
  scope: "resources:write",
  async handle({ path, tenant, core, call }) {
    const { id } = await core.resources.deleteResource({ tenant, id: path["id"] ?? "" }, call);
    return { status: 200, body: { id, object: "resource", deleted: true } };
  },
};
