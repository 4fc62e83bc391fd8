import { createHash, timingSafeEqual } from "node:crypto";
import type { CallContext } from "@rms/proto";
import { errors } from "../errors.js";

/** Checks `authorization: Bearer <admin token>` on every call, in constant time. */
export function adminTokenGuard(token: string): (context: CallContext) => void {
  const expected = createHash("sha256").update(token).digest();
  return (context) => {
    const header = context.metadata.get("authorization")[0];
    const presented = typeof header === "string" && header.startsWith("Bearer ") ? header.slice(7) : "";
    const digest = createHash("sha256").update(presented).digest();
    if (!timingSafeEqual(digest, expected)) {
      throw errors.unauthenticated("admin_token_invalid", "Missing or invalid admin token.");
    }
  };
}
