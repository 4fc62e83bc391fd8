import { createHash, timingSafeEqual } from "node:crypto";
import type { CallContext } from "@rms/proto";
import { errors } from "../errors.js";

/**
 * Who calls core. `admin`: the operator (the `rms` CLI, `npm start`'s first-start bootstrap), allowed
 * everything. `gateway`: the public API's process, allowed only the calls it makes.
 */
export type Role = "admin" | "gateway";

/**
 * Which roles may call each method. A method missing here is refused to everyone, so a new RPC is
 * closed until it is given its roles (a test checks that every method of our services is listed).
 */
export const METHOD_ROLES: Readonly<Record<string, readonly Role[]>> = {
  "/rms.v1.ResourceService/CreateResource": ["admin", "gateway"],
  "/rms.v1.ResourceService/GetResource": ["admin", "gateway"],
  "/rms.v1.ResourceService/UpdateResource": ["admin", "gateway"],
  "/rms.v1.ResourceService/DeleteResource": ["admin", "gateway"],
  "/rms.v1.ResourceService/ListResources": ["admin", "gateway"],
  "/rms.v1.AdminService/CreateAccount": ["admin"],
  "/rms.v1.AdminService/ListAccounts": ["admin"],
  "/rms.v1.AdminService/CreateKey": ["admin"],
  "/rms.v1.AdminService/ListKeys": ["admin"],
  // The gateway revokes any key it sees over plain HTTP (CONTRACT.md section 2, in ../shared/docs/).
  "/rms.v1.AdminService/RevokeKey": ["admin", "gateway"],
  "/rms.v1.AdminService/VerifyKey": ["admin", "gateway"],
};

/** The bearer token of each role; a role without one cannot be used. */
export type RoleTokens = Readonly<Partial<Record<Role, string>>>;

const digest = (token: string) => createHash("sha256").update(token).digest();

/**
 * Checks `authorization: Bearer <token>` on every call: the token names a role (compared in
 * constant time), the role must be allowed the method. UNAUTHENTICATED for an unknown token,
 * PERMISSION_DENIED for a known one that may not make this call.
 */
export function roleGuard(tokens: RoleTokens): (context: CallContext) => void {
  const known = Object.entries(tokens)
    .filter((entry): entry is [Role, string] => typeof entry[1] === "string" && entry[1] !== "")
    .map(([role, token]) => ({ role, digest: digest(token) }));
  return (context) => {
    const header = context.metadata.get("authorization")[0];
    const presented = digest(typeof header === "string" && header.startsWith("Bearer ") ? header.slice(7) : "");
    let role: Role | undefined;
    for (const candidate of known) if (timingSafeEqual(presented, candidate.digest)) role = candidate.role;
    if (!role) throw errors.unauthenticated("admin_token_invalid", "Missing or invalid token.");
    if (!METHOD_ROLES[context.method]?.includes(role)) {
      throw errors.permissionDenied("method_not_allowed", `The ${role} credential may not call ${context.method}.`);
    }
  };
}
