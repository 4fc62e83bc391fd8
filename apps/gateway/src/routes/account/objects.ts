import { idPattern, KeyKind } from "@rms/proto";
import type { OperationInput } from "../../engine/operation.js";
import { constant, field, publicObject } from "../../schema/objects.js";

const KEY_KINDS: Partial<Record<KeyKind, string>> = { [KeyKind.SECRET]: "secret", [KeyKind.RESTRICTED]: "restricted", [KeyKind.PUBLISHABLE]: "publishable" };

/** Whose request it is: the account, the mode and the key, as the verified key says (never the key itself). */
export interface Caller {
  readonly tenant: OperationInput["tenant"];
  readonly key: OperationInput["key"];
}

/**
 * The account a key belongs to, as Stripe's `GET /v1/account` answers it: what a client (the dashboard) shows so
 * that its user knows which account and mode it acts in, and the key's own id, kind and whether it is a dashboard
 * session's (which the dashboard's sign-out ends).
 */
export const AccountObject = publicObject<Caller>("Account", {
  id: field({ type: "string", pattern: `^${idPattern("acct")}$`, description: "The account's id." }, (c) => c.tenant.accountId),
  object: constant("account"),
  livemode: field({ type: "boolean", description: "The mode of the key: live (true) or test (false)." }, (c) => c.tenant.livemode),
  api_key: field({ type: "string", pattern: `^${idPattern("key")}$`, description: "The id of the key the request was made with." }, (c) => c.key.keyId),
  key_kind: field(
    { type: "string", enum: ["secret", "restricted", "publishable"], description: "The kind of that key." },
    (c) => KEY_KINDS[c.key.kind] ?? "secret",
  ),
  dashboard_session: field(
    { type: "boolean", description: "True when the key is a dashboard session's (`POST /v1/dashboard_sessions/{api_key}/revoke` ends it)." },
    (c) => c.key.dashboardSession,
  ),
});
