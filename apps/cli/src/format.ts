import { KEY_KIND, type Account, type ApiKey, type Job } from "@rms/proto";

const orNull = (seconds: bigint) => (seconds === 0n ? null : Number(seconds));

export function accountJson(account: Account) {
  return { id: account.id, object: "account", created: Number(account.created) };
}

export function keyJson(key: ApiKey, secret?: string) {
  return {
    id: key.id,
    object: "api_key",
    account: key.accountId,
    kind: KEY_KIND.nameOf(key.kind) ?? "unknown",
    livemode: key.livemode,
    scopes: key.scopes,
    prefix: key.prefix,
    created: Number(key.created),
    expires_at: orNull(key.expiresAt),
    revoked_at: orNull(key.revokedAt),
    dashboard_session: key.dashboardSession,
    // A dashboard session's key: the secret key that made it, whose revocation ends it too (null: the operator's).
    ...(key.dashboardSession ? { created_by: key.createdBy || null } : {}),
    last_used_at: orNull(key.lastUsedAt),
    ...(secret ? { secret } : {}),
  };
}

const isoOf = (seconds: bigint) => new Date(Number(seconds) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");

/**
 * A key as `rms keys list` prints it: id, prefix, kind (a dashboard session's says so), mode, whether it works now
 * (revoked, expired at, or active until its expiry), its scopes.
 */
export function keyLine(key: ApiKey, nowSeconds: number = Date.now() / 1000): string {
  const kind = key.dashboardSession ? "dashboard-session" : (KEY_KIND.nameOf(key.kind) ?? "unknown");
  const expires = Number(key.expiresAt);
  const state = key.revokedAt
    ? `revoked ${isoOf(key.revokedAt)}`
    : expires !== 0 && expires <= nowSeconds
      ? `expired ${isoOf(key.expiresAt)}`
      : expires !== 0
        ? `active, expires ${isoOf(key.expiresAt)}`
        : "active, no expiry";
  return `${key.id}  ${key.prefix}…  ${kind}  ${key.livemode ? "live" : "test"}  ${state}  ${key.scopes.join(",")}`;
}

/** The fields of the public job object a line shows. */
interface PublicJob {
  id: string;
  type: string;
  status: string;
  params: { file?: string };
  progress: { total: number | null; processed: number; failed: number; skipped: number };
  result: { results_file?: string | null; file?: string | null } | null;
  cancel_requested_at: number | null;
}

/** A job exactly as the public API shows it: core renders it once, for the API, its events and here. */
export function jobJson(job: Job): Record<string, unknown> {
  return JSON.parse(job.json) as Record<string, unknown>;
}

/** One line per job for people: id, type, status, progress, and the files it reads and wrote (an import's input, its results, an export's file). */
export function jobLine(job: Job): string {
  const { id, type, status, params, progress: p, result, cancel_requested_at } = jobJson(job) as unknown as PublicJob;
  const total = p.total === null ? "?" : String(p.total);
  const cancel = cancel_requested_at !== null ? "  cancel requested" : "";
  const files = [
    params.file ? `from ${params.file}` : null,
    result?.results_file ? `results ${result.results_file}` : null,
    result?.file ? `file ${result.file}` : null,
  ].filter((part) => part !== null);
  return (
    `${id}  ${type}  ${status}  ${p.processed}/${total} processed, ${p.failed} failed, ${p.skipped} ` +
    `skipped${cancel}${files.length > 0 ? `  ${files.join(", ")}` : ""}`
  );
}
