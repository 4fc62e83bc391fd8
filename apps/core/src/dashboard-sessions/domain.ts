import {
  DashboardSessionService,
  PRESENTED_KEY_ID_METADATA,
  SCOPES,
  type CallContext,
  type CreateDashboardSessionRequest,
  type RevokeDashboardSessionRequest,
  type Scope,
  type ServiceImplementation,
} from "@rms/proto";
import { keyMessage } from "../accounts/key-message.js";
import { AccountStore } from "../accounts/store.js";
import { serviceDomain } from "../domain.js";
import { errors } from "../errors.js";
import { rpc, type PresentedKeyCheck } from "../grpc/define-rpc.js";
import { isId } from "../ids.js";

/** How long a dashboard key lives when the caller does not say (seconds). */
export const DASHBOARD_SESSION_DEFAULT_S = 3600;
/** The longest a dashboard key may live (seconds): one day. */
export const DASHBOARD_SESSION_MAX_S = 86_400;

/** The scopes of a dashboard key: every scope, or only those that read (CONTRACT.md section 13). */
export function dashboardScopes(readOnly: boolean): Scope[] {
  return readOnly ? SCOPES.filter((scope) => scope.endsWith(":read")) : [...SCOPES];
}

/** The id of the key the gateway says the caller presented; none for the operator's CLI. */
function presentedKeyIdOf(context: CallContext): string | null {
  const value = context.metadata.get(PRESENTED_KEY_ID_METADATA)[0];
  return typeof value === "string" ? value : null;
}

/**
 * Dashboard sessions: a short-lived restricted key for a sign-in link. Core makes the key (the gateway never
 * does): for a public request only on behalf of a presented, live secret key of the same tenant (checked here
 * too, not only by the gateway), for a client acting on its own authority (the operator's CLI, no presented key)
 * for any existing account.
 * A declared write whose answer holds the key's secret: under an Idempotency-Key it runs once and its answer is
 * recorded sealed (grpc/idempotent.ts), so a repeat gets the same key back, never a second one.
 */
export function dashboardSessionService(store: AccountStore, checkKey: PresentedKeyCheck): ServiceImplementation<typeof DashboardSessionService> {
  // Which key was presented is the call's metadata, not its message: the declaration is made for it.
  const declaration = (presentedId: string | null) =>
    rpc.write({
      idempotency: "sealed",
      parse: (request: CreateDashboardSessionRequest) => {
        const expiresIn = request.expiresIn === 0n ? DASHBOARD_SESSION_DEFAULT_S : Number(request.expiresIn);
        if (!Number.isInteger(expiresIn) || expiresIn < 1 || expiresIn > DASHBOARD_SESSION_MAX_S) {
          throw errors.invalid("parameter_invalid", `expires_in must be an integer from 1 to ${DASHBOARD_SESSION_MAX_S} (seconds).`, "expires_in");
        }
        return { expiresIn, readOnly: request.readOnly };
      },
      async write({ expiresIn, readOnly }, { tenant }) {
        if (presentedId !== null) {
          const presented = isId("key", presentedId) ? await store.getKey(presentedId) : null;
          if (presented?.kind !== "secret") throw errors.of("insufficient_scope", "Only a secret key can make a dashboard session.");
        } else if (!isId("acct", tenant.account) || !(await store.getAccount(tenant.account))) {
          throw errors.notFound("account", tenant.account, "account");
        }
        return store.createKey({
          account: tenant.account,
          kind: "restricted",
          livemode: tenant.livemode,
          scopes: dashboardScopes(readOnly),
          expiresAt: Math.floor(Date.now() / 1000) + expiresIn,
          // Linked to the key that made it (revoking that key ends the session: AccountStore.inEffect), and marked as a
          // session's: its requests are the dashboard's in the request logs (`source`).
          dashboardSession: { createdBy: presentedId },
        });
      },
      reply: ({ key, secret }) => ({
        secret,
        key: keyMessage(key),
      }),
    });
  // Who may end a session: any secret key of the tenant, or the session's own key (signing out); the operator too.
  const revocation = (presentedId: string | null) =>
    rpc.write({
      parse: (request: RevokeDashboardSessionRequest) => {
        if (!isId("key", request.id)) throw errors.notFound("dashboard session", request.id, "id");
        return { id: request.id };
      },
      async write({ id }, { tenant }) {
        const session = await store.getKey(id);
        if (!session || session.account !== tenant.account || session.livemode !== tenant.livemode || session.dashboard_session === undefined) {
          throw errors.notFound("dashboard session", id, "id");
        }
        if (presentedId !== null && presentedId !== id) {
          const presented = isId("key", presentedId) ? await store.getKey(presentedId) : null;
          if (presented?.kind !== "secret") throw errors.of("insufficient_scope", "Only a secret key, or the session's own key, can end a dashboard session.");
        }
        const revoked = await store.revokeKey(id);
        return store.inEffect(revoked ?? session);
      },
      reply: (key) => ({ key: keyMessage(key) }),
    });
  const create = DashboardSessionService.method.createDashboardSession;
  const revoke = DashboardSessionService.method.revokeDashboardSession;
  return {
    createDashboardSession: (request, context) => declaration(presentedKeyIdOf(context)).run(request, context, checkKey, create),
    revokeDashboardSession: (request, context) => revocation(presentedKeyIdOf(context)).run(request, context, checkKey, revoke),
  };
}

/** The sign-in keys of the dashboard; their keys live with every other key (the accounts domain's collection). */
export const dashboardSessionsDomain = serviceDomain({
  name: "dashboard-sessions",
  service: DashboardSessionService,
  callers: { createDashboardSession: ["operator", "gateway"], revokeDashboardSession: ["operator", "gateway"] },
  open({ db, checkKey }) {
    const store = new AccountStore(db);
    return { indexes: { ensureIndexes: async () => {} }, implementation: dashboardSessionService(store, checkKey) };
  },
});
