import { KEY_KIND, type Account, type ApiKey } from "@rms/proto";

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
