import { createHash, timingSafeEqual } from "node:crypto";
import { AUTHORIZATION_METADATA, bearerToken, type CallContext } from "@rms/proto";
import { errors } from "../errors.js";

/**
 * Who calls core. `admin`: the operator (the `rms` CLI, `npm start`'s first-start bootstrap), allowed
 * everything. `gateway`: the public API's process, allowed only the calls it makes.
 */
export type Role = "admin" | "gateway";

/** The bearer token of each role; a role without one cannot be used. */
export type RoleTokens = Readonly<Partial<Record<Role, string>>>;

const digest = (token: string) => createHash("sha256").update(token).digest();

/** Which roles may call each method, by gRPC path (built from the domains' rows in domains.ts). */
export type MethodRoleTable = Readonly<Record<string, readonly Role[]>>;

/**
 * Checks `authorization: Bearer <token>` on every call: the token names a role (compared in
 * constant time), the role must be allowed the method. UNAUTHENTICATED for an unknown token,
 * PERMISSION_DENIED for a known one that may not make this call, or for a method the table
 * does not list (so a new RPC is closed until it is given its roles). Returns the role, which handlers
 * see as `context.caller`.
 */
export function roleGuard(tokens: RoleTokens, methodRoles: MethodRoleTable): (context: CallContext) => Role {
  const known = Object.entries(tokens)
    .filter((entry): entry is [Role, string] => typeof entry[1] === "string" && entry[1] !== "")
    .map(([role, token]) => ({ role, digest: digest(token) }));
  return (context) => {
    const presented = digest(bearerToken(context.metadata.get(AUTHORIZATION_METADATA)[0]) ?? "");
    let role: Role | undefined;
    for (const candidate of known) if (timingSafeEqual(presented, candidate.digest)) role = candidate.role;
    if (!role) throw errors.unauthenticated("admin_token_invalid", "Missing or invalid token.");
    if (!methodRoles[context.method]?.includes(role)) {
      throw errors.permissionDenied("method_not_allowed", `The ${role} credential may not call ${context.method}.`);
    }
    return role;
  };
}
