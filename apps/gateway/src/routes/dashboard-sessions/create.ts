import { optionalBoolean, optionalInteger } from "../../parsing/params.js";
import { defineOperation } from "../../engine/operation.js";
import { DashboardSessionObject, linkOrigin } from "./objects.js";

/** Longest a dashboard session's key lives (seconds): one day; default one hour (core applies the same bounds). */
const EXPIRES_IN_MAX_S = 86_400;

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
  success: {
    status: 201,
    description: "The session: its link carries a new restricted key, which ends with the secret key that made it.",
    object: DashboardSessionObject,
  },
  errors: ["parameter_invalid", "insufficient_scope"],
  service: "dashboardSessions",
  rpc: "createDashboardSession",
  request({ params, tenant }) {
    const readOnly = optionalBoolean(params, "read_only") ?? false;
    const expiresIn = optionalInteger(params, "expires_in", { min: 1, max: EXPIRES_IN_MAX_S }) ?? 3600;
    return { tenant, readOnly, expiresIn: BigInt(expiresIn) };
  },
  reply: ({ key, secret }, { origin }) => (key === undefined ? undefined : { key, secret, origin: linkOrigin(origin) }),
});
