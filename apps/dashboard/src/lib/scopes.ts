import { RMS, RMSError } from "@rms/sdk";
import { API_ORIGIN } from "../api/client";
import { SCOPES, type Scope } from "../vocabulary";

/**
 * How the dashboard learns what its key may do, through the public API only: one harmless request per scope, read
 * by its answer. A scope the key lacks is refused with 403 (`insufficient_scope` or `publishable_key_read_only`)
 * before anything else is checked; any other answer (200, or 400 for the write probes that carry an unknown
 * parameter, which change nothing) means the key has it. `jobs:write` is probed with a dry run (`validate_only`),
 * which answers 200; `resources:write` and `files:write` have no dry run, so their probes carry the unknown
 * parameter `scope_probe` (the overview leaves those requests out of "latest failed requests"). A route the server does
 * not have (`404 route_missing`) means the
 * feature is absent, so the scope is not offered either.
 */
export interface ScopeProbe {
  readonly method: "GET" | "POST";
  readonly path: string;
  /** A body the route refuses (400) after the scope check, so the probe never changes anything. */
  readonly body?: Record<string, unknown>;
}

/** One probe per scope the API grants: a scope without one does not type-check, and the dashboard could not offer it. */
export const SCOPE_PROBES: Readonly<Record<Scope, ScopeProbe>> = {
  "resources:read": { method: "GET", path: "/v1/resources?limit=1" },
  "resources:write": { method: "POST", path: "/v1/resources", body: { scope_probe: true } },
  "events:read": { method: "GET", path: "/v1/events?limit=1" },
  "jobs:read": { method: "GET", path: "/v1/jobs?limit=1" },
  // A dry run (`validate_only`) of a job that matches nothing: a 200 preview, no job.
  "jobs:write": {
    method: "POST",
    path: "/v1/jobs",
    body: { type: "resources.bulk_delete", params: { filter: { ids: ["res_0000000000000000000000"] } }, validate_only: true },
  },
  "webhooks:write": { method: "GET", path: "/v1/webhook_endpoints?limit=1" },
  "files:read": { method: "GET", path: "/v1/files?limit=1" },
  "files:write": { method: "POST", path: "/v1/uploads", body: { scope_probe: true } },
  "request_logs:read": { method: "GET", path: "/v1/request_logs?limit=1" },
};

/** Whether an answer to a probe means the key has its scope. */
export function grants(status: number, code: string | undefined): boolean {
  if (status === 401 || status === 403) return false;
  if (status === 404 && code === "route_missing") return false;
  if (status === 405) return false;
  return status < 500;
}

/**
 * Runs every probe with `key` (through the SDK, without retries: an answer is what is asked for); a 401 (a dead key)
 * rejects with the API's answer.
 */
export async function probeScopes(key: string, fetcher?: typeof fetch): Promise<Scope[]> {
  const client = new RMS(key, { baseUrl: API_ORIGIN, maxNetworkRetries: 0, ...(fetcher ? { fetch: fetcher } : {}) });
  const results = await Promise.all(
    SCOPES.map(async (scope) => {
      const probe = SCOPE_PROBES[scope];
      try {
        await client.rawRequest(probe.method, probe.path, probe.body);
        return scope;
      } catch (error) {
        if (!(error instanceof RMSError) || error.statusCode === undefined) throw error;
        if (error.statusCode === 401)
          throw Object.assign(new Error(error.message), { status: 401, body: { error: { message: error.message, request_id: error.requestId } } });
        return grants(error.statusCode, error.code) ? scope : null;
      }
    }),
  );
  return results.filter((s): s is Scope => s !== null);
}

/** Why a control is disabled: the scope it needs and the key lacks, in words; null when allowed. */
export function missingScopeReason(scopes: readonly Scope[], needed: Scope): string | null {
  return scopes.includes(needed)
    ? null
    : `This key does not have the ${needed} scope${needed.endsWith(":write") ? " (a read-only session changes nothing)" : ""}.`;
}

/** Whether a recorded request was one of these probes (its parameters carry `scope_probe`). */
export function isScopeProbe(params: unknown): boolean {
  return typeof params === "object" && params !== null && "scope_probe" in params;
}
