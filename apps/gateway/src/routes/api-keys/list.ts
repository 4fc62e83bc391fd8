import { pageParams, pageRequest } from "../../schema/params.js";
import { defineOperation } from "../../engine/operation.js";
import { ApiKeyListObject } from "./objects.js";

/** GET /v1/api_keys: the account's keys in this mode, dashboard sessions' included, newest first. */
export const listApiKeys = defineOperation({
  method: "GET",
  path: "/v1/api_keys",
  summary: "List the account's API keys and dashboard sessions (a secret key or a dashboard session's key)",
  // A secret key, or a dashboard session's key (read-only too, which holds the read scopes): core checks the kind again.
  scope: "resources:read",
  secretKeyOnly: true,
  orDashboardSession: true,
  parameters: pageParams("key", "key"),
  success: { status: 200, description: "One page of keys, newest first: never a secret, a hash or any part of one.", object: ApiKeyListObject },
  errors: ["limit_invalid", "parameter_invalid", "insufficient_scope"],
  service: "apiKeys",
  rpc: "listApiKeys",
  request: ({ params, tenant }) => ({ tenant, ...pageRequest(params) }),
  reply: (page) => ({ items: page.keys, hasMore: page.hasMore }),
});
