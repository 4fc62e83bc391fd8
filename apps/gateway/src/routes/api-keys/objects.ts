import { type ApiKey, KEY_KIND, SCOPES } from "@rms/proto";
import { constant, field, listOf, publicObject } from "../../schema/objects.js";
import { idSchema, LIST_LIMIT_MAX } from "../../schema/params.js";

const orNull = (seconds: bigint) => (seconds === 0n ? null : Number(seconds));

/**
 * A key as the account sees it (`GET /v1/api_keys`): what it is and what it may do, when it ends and when it was last
 * used. Never key material: no secret, no hash, no part of the secret.
 */
export const ApiKeyObject = publicObject<ApiKey>("ApiKey", {
  id: field(idSchema("key", "A key's id: `key_` and an opaque suffix (the secret is never shown again)."), (k) => k.id),
  object: constant("api_key"),
  kind: field({ type: "string", enum: ["secret", "publishable", "restricted"] }, (k) => KEY_KIND.nameOf(k.kind) ?? "restricted"),
  dashboard_session: field({ type: "boolean", description: "True for a dashboard session's key (a sign-in link's)." }, (k) => k.dashboardSession),
  scopes: field({ type: "array", items: { type: "string", enum: [...SCOPES] }, description: "What it may do (a secret key: everything)." }, (k) => k.scopes),
  livemode: field({ type: "boolean" }, (k) => k.livemode),
  status: field({ type: "string", enum: ["active", "expired", "revoked"], description: "Whether it works now." }, (k) =>
    k.revokedAt !== 0n ? "revoked" : k.expiresAt !== 0n && Number(k.expiresAt) <= Date.now() / 1000 ? "expired" : "active",
  ),
  created: field({ type: "integer", description: "Unix seconds." }, (k) => Number(k.created)),
  expires_at: field({ type: ["integer", "null"], description: "Unix seconds; null when it never expires." }, (k) => orNull(k.expiresAt)),
  revoked_at: field({ type: ["integer", "null"], description: "Unix seconds; null while not revoked." }, (k) => orNull(k.revokedAt)),
  last_used_at: field(
    { type: ["integer", "null"], description: "Unix seconds of a use, to within 5 minutes (a use is noted at most that often); null when none was noted." },
    (k) => orNull(k.lastUsedAt),
  ),
});

export const ApiKeyListObject = listOf(ApiKeyObject, "/v1/api_keys", LIST_LIMIT_MAX);

export const KEY_ID_PATH = { id: { example: "key_0000000000000000000000", schema: idSchema("key", "The key's id.") } };
