import { defineOperation } from "../../engine/operation.js";
import { ApiKeyObject, KEY_ID_PATH } from "./objects.js";

/** POST /v1/api_keys/:id/revoke: ends a key of the account at once (secret keys only). */
export const revokeApiKey = defineOperation({
  method: "POST",
  path: "/v1/api_keys/:id/revoke",
  summary: "Revoke an API key or a dashboard session at once (secret keys only)",
  scope: "resources:write",
  secretKeyOnly: true,
  pathParameters: KEY_ID_PATH,
  success: { status: 200, description: "The key, revoked: its next request answers 401 `api_key_revoked`.", object: ApiKeyObject },
  errors: ["resource_missing", "insufficient_scope"],
  service: "apiKeys",
  rpc: "revokeApiKey",
  request: ({ path, tenant }) => ({ tenant, id: path["id"] ?? "" }),
  reply: ({ key }) => key,
});
