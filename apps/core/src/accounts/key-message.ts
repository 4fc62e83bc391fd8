import type { MessageInitShape } from "@bufbuild/protobuf";
import { KEY_KIND, type ApiKeySchema } from "@rms/proto";
import type { KeyDocument } from "./store.js";

/** A stored key as the API key message every service answers with (never its hash or secret). */
export function keyMessage(key: KeyDocument): MessageInitShape<typeof ApiKeySchema> {
  return {
    id: key._id,
    accountId: key.account,
    kind: KEY_KIND.valueOf(key.kind),
    livemode: key.livemode,
    scopes: key.scopes,
    created: BigInt(key.created),
    expiresAt: BigInt(key.expires_at ?? 0),
    revokedAt: BigInt(key.revoked_at ?? 0),
    prefix: key.prefix,
    dashboardSession: key.dashboard_session !== undefined,
    createdBy: key.dashboard_session?.created_by ?? "",
    lastUsedAt: BigInt(key.last_used_at ?? 0),
  };
}
