import { KEY_KIND, keyHash, SCOPES, withImpliedScopes, type KeyKindName, type Scope } from "@rms/proto";
import { randomBase62 } from "../ids.js";

export { isScope, SCOPES, type KeyKindName, type Scope } from "@rms/proto";

const KIND_PREFIX: Record<KeyKindName, string> = { secret: "sk", publishable: "pk", restricted: "rk" };

/** 32 base62 characters ≈ 190 bits of entropy. */
const SECRET_RANDOM_CHARS = 32;
/** How much of a secret is kept in clear, to recognise a key in listings. */
const DISPLAY_PREFIX_CHARS = 12;

/** The scopes a key grants: all for secret keys, read-only for publishable, the given ones (expanded) for restricted. */
export function grantedScopes(kind: KeyKindName, requested: readonly Scope[]): Scope[] {
  if (kind === "secret") return [...SCOPES];
  if (kind === "publishable") return ["resources:read"];
  return withImpliedScopes(requested);
}

/** A new secret such as `sk_test_…`; only its hash is ever stored. */
export function newSecret(kind: KeyKindName, livemode: boolean): string {
  return `${KIND_PREFIX[kind]}_${livemode ? "live" : "test"}_${randomBase62(SECRET_RANDOM_CHARS)}`;
}

/** What the secret's shape says about it, or null when it cannot be a key of ours. */
export function parseSecret(secret: string): { kind: KeyKindName; livemode: boolean } | null {
  const match = /^(sk|pk|rk)_(live|test)_[0-9A-Za-z]{32}$/.exec(secret);
  if (!match) return null;
  const kind = KEY_KIND.names.find((k) => KIND_PREFIX[k] === match[1]);
  return kind ? { kind, livemode: match[2] === "live" } : null;
}

/** The stored form of a secret: the wire-wide key hash (@rms/proto), so every holder of a key hash agrees with core. */
export const hashSecret = keyHash;

export function displayPrefix(secret: string): string {
  return secret.slice(0, DISPLAY_PREFIX_CHARS);
}
