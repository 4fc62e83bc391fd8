import type { ApiKey } from "@rms/proto";
import { optionalBoolean, optionalInteger } from "../../parsing/params.js";
import { constant, field, publicObject } from "../../schema/objects.js";
import { defineOperation } from "../../engine/operation.js";

/** Longest a dashboard session's key lives (seconds): one day; default one hour (core applies the same bounds). */
const EXPIRES_IN_MAX_S = 86_400;

/** A `Host` header we put into a link: a host name or address and port, nothing else (else `localhost`). */
function linkOrigin(origin: string | undefined): string {
  return origin !== undefined && /^https:\/\/[A-Za-z0-9.-]+(:[0-9]{1,5})?$|^https:\/\/\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$/.test(origin) ? origin : "https://localhost";
}

interface Session {
  readonly key: ApiKey;
  readonly secret: string;
  readonly readOnly: boolean;
  readonly origin: string;
}

/** CONTRACT.md section 13: the sign-in link of the dashboard; the key itself is only in the link's fragment. */
export const DashboardSessionObject = publicObject<Session>("DashboardSession", {
  object: constant("dashboard_session"),
  url: field(
    { type: "string", format: "uri", description: "Open it in a browser: `https://<host>/dashboard/#key=rk_...`. The fragment never reaches a server." },
    (s) => `${s.origin}/dashboard/#key=${s.secret}`,
  ),
  read_only: field({ type: "boolean", description: "True: the key has only the read scopes." }, (s) => s.readOnly),
  expires_at: field({ type: "integer", description: "Unix seconds; the key is refused after it." }, (s) => Number(s.key.expiresAt)),
  api_key: field({ type: "string", pattern: "^key_[0-9A-Za-z]+$", description: "The id of the restricted key (for `rms keys revoke`)." }, (s) => s.key.id),
});

/** POST /v1/dashboard_sessions: a short-lived restricted key, made by core, as a sign-in link. */
export const createDashboardSession = defineOperation({
  method: "POST",
  path: "/v1/dashboard_sessions",
  summary: "Make a sign-in link of the dashboard (secret keys only)",
  // Only a secret key may run it (checked before the scope would matter; core checks it again).
  scope: "resources:write",
  secretKeyOnly: true,
  parameters: {
    read_only: { example: true, schema: { type: "boolean", default: false, description: "Only the read scopes: the session changes nothing." } },
    expires_in: {
      example: 3600,
      schema: { type: "integer", minimum: 1, maximum: EXPIRES_IN_MAX_S, default: 3600, description: "Seconds the key lives, at most 86400." },
    },
  },
  success: { status: 201, description: "The session: its link carries a new restricted key.", object: DashboardSessionObject },
  errors: ["parameter_invalid", "insufficient_scope"],
  service: "dashboardSessions",
  rpc: "createDashboardSession",
  request({ params, tenant }) {
    const readOnly = optionalBoolean(params, "read_only") ?? false;
    const expiresIn = optionalInteger(params, "expires_in", { min: 1, max: EXPIRES_IN_MAX_S }) ?? 3600;
    return { tenant, readOnly, expiresIn: BigInt(expiresIn) };
  },
  reply: ({ key, secret }, { params, origin }) =>
    key === undefined ? undefined : { key, secret, readOnly: optionalBoolean(params, "read_only") ?? false, origin: linkOrigin(origin) },
});

export const DASHBOARD_SESSION_OPERATIONS = [createDashboardSession];
