import { KeyKind, type Account, type ApiKey } from "@rms/proto";

const KIND_NAMES: Record<number, string> = { [KeyKind.SECRET]: "secret", [KeyKind.PUBLISHABLE]: "publishable", [KeyKind.RESTRICTED]: "restricted" };

const orNull = (seconds: bigint) => (seconds === 0n ? null : Number(seconds));

export function accountJson(account: Account) {
  return { id: account.id, object: "account", created: Number(account.created) };
}

export function keyJson(key: ApiKey, secret?: string) {
  return {
    id: key.id,
    object: "api_key",
    account: key.accountId,
    kind: KIND_NAMES[key.kind] ?? "unknown",
    livemode: key.livemode,
    scopes: key.scopes,
    prefix: key.prefix,
    created: Number(key.created),
    expires_at: orNull(key.expiresAt),
    revoked_at: orNull(key.revokedAt),
    ...(secret ? { secret } : {}),
  };
}

export const KIND_BY_NAME: Record<string, KeyKind> = { secret: KeyKind.SECRET, publishable: KeyKind.PUBLISHABLE, restricted: KeyKind.RESTRICTED };
