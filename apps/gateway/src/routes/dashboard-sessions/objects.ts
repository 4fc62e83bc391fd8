import { exampleId, idPattern, type ApiKey } from "@rms/proto";
import { constant, field, publicObject } from "../../schema/objects.js";
import type { ParamSpec } from "../../engine/operation.js";

/** A `Host` header we put into a link: a host name or address and port, nothing else (else `localhost`). */
export function linkOrigin(origin: string | undefined): string {
  return origin !== undefined && /^https:\/\/[A-Za-z0-9.-]+(:[0-9]{1,5})?$|^https:\/\/\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$/.test(origin)
    ? origin
    : "https://localhost";
}

/** A session as answered: its key, and the link only when the key's secret is at hand (the create's answer). */
export interface Session {
  readonly key: ApiKey;
  /** The key's secret: in the create's answer only (shown once). */
  readonly secret: string | null;
  readonly origin: string;
}

/** A session's key holds no scope that writes: a read-only session. */
export function readOnly(key: ApiKey): boolean {
  return !key.scopes.some((scope) => scope.endsWith(":write"));
}

/** A session's id is its key's id (CONTRACT.md section 13). */
const SESSION_ID = { type: "string", pattern: `^${idPattern("key")}$` } as const;

/** CONTRACT.md section 13: the sign-in link of the dashboard; the key itself is only in the link's fragment. */
export const DashboardSessionObject = publicObject<Session>("DashboardSession", {
  id: field({ ...SESSION_ID, description: "The session's id: its key's id (`api_key`)." }, (s) => s.key.id),
  object: constant("dashboard_session"),
  url: field(
    {
      type: ["string", "null"],
      format: "uri",
      description:
        "Open it in a browser: `https://<host>/dashboard/#key=rk_...`. The fragment never reaches a server. Only in the create's answer (the key is " +
        "shown once); null in any other.",
    },
    (s) => (s.secret === null ? null : `${s.origin}/dashboard/#key=${s.secret}`),
  ),
  read_only: field({ type: "boolean", description: "True: the key has only the read scopes." }, (s) => readOnly(s.key)),
  expires_at: field({ type: "integer", description: "Unix seconds; the key is refused after it." }, (s) => Number(s.key.expiresAt)),
  api_key: field({ ...SESSION_ID, description: "The id of the restricted key (for `rms keys revoke`)." }, (s) => s.key.id),
  revoked_at: field(
    { type: ["integer", "null"], description: "Unix seconds when the session was ended (revoked, or the key that made it revoked); null while it is not." },
    (s) => (s.key.revokedAt === 0n ? null : Number(s.key.revokedAt)),
  ),
});

/** The `:id` of `/v1/dashboard_sessions/:id/revoke`. */
export const DASHBOARD_SESSION_ID_PATH = {
  id: { example: exampleId("key"), schema: { ...SESSION_ID, description: "The session's id (its key's id, `api_key`)." } },
} satisfies Record<string, ParamSpec>;
