import { KeyKind, PRESENTED_KEY_ID_METADATA, PRESENTED_KEY_METADATA, REQUEST_ID_METADATA, type ApiKey, type Scope } from "@rms/proto";
import type { IncomingHttpHeaders } from "node:http";
import type { Response } from "express";
import { ApiError, fromCoreError } from "../errors.js";
import type { CoreClients } from "../core.js";
import type { PrincipalCache } from "./principal-cache.js";
import type { Principal } from "./principal.js";
import { requestIdOf } from "../http/request-id.js";
import { recordPrincipal } from "../http/facts.js";

export type { Scope };

/**
 * The key presented with a request: `Authorization: Bearer <key>`, or (as Stripe
 * clients do with `curl -u sk_...:`) Basic with the key as user name. Undefined
 * when no credentials were sent.
 */
export function presentedKey(headers: IncomingHttpHeaders): string | undefined {
  const header = headers.authorization?.trim();
  if (!header) return undefined;
  const [scheme = "", ...rest] = header.split(/\s+/);
  const credentials = rest.join(" ");
  if (scheme.toLowerCase() === "bearer") return credentials;
  if (scheme.toLowerCase() === "basic") {
    const decoded = Buffer.from(credentials, "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    return colon === -1 ? decoded : decoded.slice(0, colon);
  }
  return "";
}

/** A request's key: who it is, the presented secret (only to pass on to core), and whether core verified it just now. */
export interface Authenticated {
  readonly principal: Principal;
  readonly secret: string;
  readonly fromCache: boolean;
}

/**
 * Who the key belongs to: from the cache of recently verified keys, else core's
 * VerifyKey; 401 (missing/invalid/expired/revoked) otherwise. A cached principal
 * is only half the check: the operation's call to core re-checks that the key is
 * live (metadata from `presentedKeyMetadata`). Without `principals` (an operation
 * no core call re-checks: one the gateway answers alone) core verifies the key
 * every time.
 */
export async function authenticate(headers: IncomingHttpHeaders, core: CoreClients, res: Response, principals?: PrincipalCache): Promise<Authenticated> {
  const secret = presentedKey(headers);
  if (secret === undefined) {
    throw new ApiError(
      "api_key_missing",
      "You did not provide an API key. Provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY').",
    );
  }
  if (secret === "" || secret.length > 512) throw new ApiError("api_key_invalid", "Invalid API key provided.");
  const cached = principals?.get(secret);
  if (cached) return { principal: cached, secret, fromCache: true };
  const principal = await verify(secret, core, res);
  principals?.set(secret, principal);
  return { principal, secret, fromCache: false };
}

/** Metadata that makes core re-check the presented key within the operation call itself. */
export function presentedKeyMetadata({ principal, secret }: Authenticated): Record<string, string> {
  return { [PRESENTED_KEY_METADATA]: secret, [PRESENTED_KEY_ID_METADATA]: principal.keyId };
}

/**
 * The refusal of a key core knows but that is revoked or expired: a 401 that belongs to the key's account (its
 * request log records it there, CONTRACT.md section 12), unlike an unknown key's. The request flow limits such a key's
 * requests per key before recording them (routes/run.ts).
 */
export class RefusedKeyError extends ApiError {
  constructor(
    readonly principal: Principal,
    code: "api_key_revoked" | "api_key_expired",
  ) {
    super(code, code === "api_key_revoked" ? "This API key has been revoked." : "This API key has expired.");
  }
}

/**
 * Core's VerifyKey: one round trip. A revoked or expired key (a dashboard session's key also once the key that made
 * it is: core answers it so) is answered as it is (`answerRefused`) and refused here with a `RefusedKeyError`, which
 * names its account; an unknown key belongs to no account.
 */
export async function verify(secret: string, core: CoreClients, res: Response): Promise<Principal> {
  let key: ApiKey | undefined;
  try {
    key = (await core.admin.verifyKey({ secret, answerRefused: true }, { metadata: { [REQUEST_ID_METADATA]: requestIdOf(res) } })).key;
  } catch (error) {
    throw fromCoreError(error);
  }
  if (!key) throw ApiError.internal();
  const principal: Principal = {
    keyId: key.id,
    kind: key.kind,
    tenant: { accountId: key.accountId, livemode: key.livemode },
    scopes: key.scopes,
    dashboardSession: key.dashboardSession,
  };
  if (key.revokedAt !== 0n) throw new RefusedKeyError(principal, "api_key_revoked");
  if (key.expiresAt !== 0n && Number(key.expiresAt) <= Date.now() / 1000) throw new RefusedKeyError(principal, "api_key_expired");
  return principal;
}

/** Secret keys may do everything; publishable keys only read; restricted keys exactly their scopes. */
export function authorize(principal: Principal, scope: Scope): void {
  if (principal.kind === KeyKind.SECRET) return;
  if (principal.kind === KeyKind.PUBLISHABLE) {
    if (scope === "resources:read") return;
    throw new ApiError("publishable_key_read_only", `Publishable keys are read-only; this request needs the '${scope}' scope. Use a secret or restricted key.`);
  }
  if (principal.kind === KeyKind.RESTRICTED && principal.scopes.includes(scope)) return;
  throw new ApiError("insufficient_scope", `The provided key does not have the required scope '${scope}' for this request.`);
}
