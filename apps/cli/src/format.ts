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
    ...(secret ? { secret } : {}),
  };
}

/** Renders jobs exactly as the public API does (loaded on first use: the other commands never load the gateway). */
export async function jobRenderer(): Promise<(job: Job) => Record<string, unknown>> {
  const { JobObject } = await import("@rms/gateway");
  return (job) => JobObject.render(job);
}

/** One line per job for people: id, type, status, progress. */
export function jobLine(job: Job): string {
  const p = job.progress;
  const total = p?.total === undefined ? "?" : String(p.total);
  const cancel = job.cancelRequestedAt !== undefined ? "  cancel requested" : "";
  return `${job.id}  ${job.type}  ${job.status}  ${p?.processed ?? 0n}/${total} processed, ${p?.failed ?? 0n} failed, ${p?.skipped ?? 0n} skipped${cancel}`;
}
