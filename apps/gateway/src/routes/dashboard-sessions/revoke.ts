import { defineOperation } from "../../engine/operation.js";
import { DASHBOARD_SESSION_ID_PATH, DashboardSessionObject } from "./objects.js";

/**
 * POST /v1/dashboard_sessions/:id/revoke: ends a session at once (its key is revoked). A secret key ends any session
 * of its account and mode; a session's own key ends that session (the dashboard's sign-out). Core decides both.
 */
export const revokeDashboardSession = defineOperation({
  method: "POST",
  path: "/v1/dashboard_sessions/:id/revoke",
  summary: "End a dashboard session",
  scope: null,
  access: "Needs a secret key, or the session's own key (signing out).",
  pathParameters: DASHBOARD_SESSION_ID_PATH,
  success: { status: 200, description: "The session, ended: its key is refused from now on (`api_key_revoked`).", object: DashboardSessionObject },
  errors: ["resource_missing", "insufficient_scope"],
  service: "dashboardSessions",
  rpc: "revokeDashboardSession",
  request: ({ path, tenant }) => ({ tenant, id: path["id"] ?? "" }),
  reply: ({ key }) => (key === undefined ? undefined : { key, secret: null, origin: "" }),
});
