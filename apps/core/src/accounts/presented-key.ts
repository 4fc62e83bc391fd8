import { timingSafeEqual } from "node:crypto";
import { PRESENTED_KEY_ID_METADATA, PRESENTED_KEY_METADATA, withImpliedScopes, type CallContext } from "@rms/proto";
import { errors } from "../errors.js";
import { isId } from "../ids.js";
import { clientOf } from "../clients/guard.js";
import { refuseOutsideScope } from "../clients/tenant-scope.js";
import type { PresentedKeyCheck } from "../grpc/define-rpc.js";
import { RPC_SCOPES } from "../grpc/scopes.js";
import { hashSecret } from "./secrets.js";
import type { AccountStore, KeyDocument } from "./store.js";

/**
 * Metadata of an operation call made on behalf of a public request: the key the
 * client presented and the id of the key it was verified as (VerifyKey, possibly
 * cached by the gateway), under PRESENTED_KEY_METADATA and PRESENTED_KEY_ID_METADATA.
 * Core re-checks it in the same call, so a revocation written by any core process
 * refuses the key on its very next request.
 */

const invalidKey = () => errors.unauthenticated("api_key_invalid", "Invalid API key provided.");

/** Throws the public refusal of a key that is revoked or past its expiry. */
export function refuseIfNotLive(key: KeyDocument, nowSeconds = Date.now() / 1000): void {
  if (key.revoked_at !== null) throw errors.unauthenticated("api_key_revoked", "This API key has been revoked.");
  if (key.expires_at !== null && key.expires_at <= nowSeconds) throw errors.unauthenticated("api_key_expired", "This API key has expired.");
}

/**
 * The check every declared RPC runs (grpc/define-rpc.ts).
 * One read by primary key (two for a dashboard session's key: its creator's too): the key must exist, match the
 * presented secret (its hash, compared in constant time: the id alone came from the caller), belong to the call's
 * tenant, be live (a session's key also while its creator is), and be of a kind and scopes that allow the RPC
 * (`authorizeKey`). Without a presented key the calling client acts on its own
 * authority, within its entry's accounts and modes (the operator: all; an internal
 * service: its lists; clients/): all but the gateway, whose credential acts for a
 * client's key and nothing else, so a leaked gateway token alone reads no tenant's data.
 */
export function presentedKeyCheck(store: AccountStore): PresentedKeyCheck {
  return async (context, tenant, options = {}) => {
    // Every tenant call passes here: the client's scope is checked again, whatever path the tenant came by.
    refuseOutsideScope(context, tenant);
    const secret = single(context, PRESENTED_KEY_METADATA);
    if (secret === null) {
      const client = clientOf(context);
      if (!client?.presentedKeyOnly) return;
      throw errors.permissionDenied("method_not_allowed", `The ${client.name} client acts only for a presented API key.`);
    }
    const id = single(context, PRESENTED_KEY_ID_METADATA);
    if (id === null || !isId("key", id)) throw invalidKey();
    const key = await store.getKey(id, options);
    if (!key || !sameHash(key.hash, hashSecret(secret)) || key.account !== tenant.account || key.livemode !== tenant.livemode) throw invalidKey();
    refuseIfNotLive(await store.inEffect(key, options));
    authorizeKey(key, context.method);
    store.noteUse(key);
  };
}

/**
 * The key's kind and scopes against what the RPC needs (RPC_SCOPES), as the gateway checks them per route, with
 * the same codes: secret keys may do everything; publishable keys only `resources:read`
 * (`publishable_key_read_only`); restricted keys exactly their scopes (`insufficient_scope`). A method not in the
 * table is refused to publishable keys and allowed to the others (the table's test lists every method core serves).
 */
export function authorizeKey(key: Pick<KeyDocument, "kind" | "scopes">, method: string): void {
  if (key.kind === "secret") return;
  const scope = RPC_SCOPES[method] ?? undefined;
  if (key.kind === "publishable") {
    if (scope === "resources:read") return;
    throw errors.of(
      "publishable_key_read_only",
      `Publishable keys are read-only; this request needs the '${scope ?? method}' scope. Use a secret or restricted key.`,
    );
  }
  if (scope === undefined || withImpliedScopes(key.scopes).includes(scope)) return;
  throw errors.of("insufficient_scope", `The provided key does not have the required scope '${scope}' for this request.`);
}

/** Constant-time equality of two hex hashes: here the key was found by an id the caller chose, so its hash is not yet known to match. */
function sameHash(a: string, b: string): boolean {
  const left = Buffer.from(a, "hex");
  const right = Buffer.from(b, "hex");
  return left.length === right.length && timingSafeEqual(left, right);
}

function single(context: CallContext, name: string): string | null {
  const value = context.metadata.get(name)[0];
  return typeof value === "string" ? value : null;
}
