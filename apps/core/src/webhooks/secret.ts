import { createCipheriv, createDecipheriv, createHmac, randomBytes } from "node:crypto";

/**
 * Endpoint signing secrets (CONTRACT.md section 7, in ../shared/docs/): stored only
 * encrypted (AES-256-GCM), shown in clear only in create and rotate answers.
 *
 * Stored form: `enc1.<key id>.<base64url of iv (12 bytes) | ciphertext | tag (16 bytes)>`.
 * The key id names which master key sealed it, so `RMS_SECRET_KEY` can be
 * rotated: decryption looks the id up in a keyring, encryption always uses its
 * primary key, and `needsReencryption` finds what an old key sealed.
 */

const MASTER_KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const FORMAT = "enc1";

export type SecretCryptoCode = "secret_key_invalid" | "secret_malformed" | "secret_key_unknown" | "secret_tampered";

/** A failure to seal or open a secret; `code` says which, the message never holds key or secret material. */
export class SecretCryptoError extends Error {
  override name = "SecretCryptoError";
  constructor(
    readonly code: SecretCryptoCode,
    message: string,
  ) {
    super(message);
  }
}

/** One master key and its id (derived from the key, so configuration holds the key alone). */
export interface MasterKey {
  readonly id: string;
  readonly bytes: Buffer;
}

/** The key new secrets are sealed with, and older keys still accepted for opening. */
export interface Keyring {
  readonly primary: MasterKey;
  readonly previous?: readonly MasterKey[];
}

/** What an endpoint's stored key records of its scheme besides the sealed key: a `v1a` key says so and keeps its public key. */
export interface KeyScheme {
  scheme?: "v1a";
  public_key?: string;
}

/** How an endpoint signs now (its newest key), as its public object shows it: the scheme, and the public key of a `v1a` one. */
export function signingSchemeOf(newest: KeyScheme | undefined): { signature_scheme: "v1" | "v1a"; public_key: string | null } {
  return newest?.scheme === "v1a" ? { signature_scheme: "v1a", public_key: newest.public_key ?? null } : { signature_scheme: "v1", public_key: null };
}

/** A master key from its 32 bytes. The id is a keyed hash, so it tells nothing about the key. */
export function masterKey(bytes: Uint8Array): MasterKey {
  if (bytes.length !== MASTER_KEY_BYTES)
    throw new SecretCryptoError("secret_key_invalid", `A secret key must be ${MASTER_KEY_BYTES} bytes, got ${bytes.length}.`);
  const key = Buffer.from(bytes);
  const id = createHmac("sha256", key).update("rms webhook secret key id").digest("base64url").slice(0, 8);
  return { id, bytes: key };
}

/** A master key from its text form (`RMS_SECRET_KEY`): 64 hex digits or the base64 of 32 bytes. */
export function parseMasterKey(text: string): MasterKey {
  const trimmed = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return masterKey(Buffer.from(trimmed, "hex"));
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed)) return masterKey(Buffer.from(trimmed, "base64"));
  throw new SecretCryptoError("secret_key_invalid", "A secret key must be 64 hex digits or the base64 of 32 bytes.");
}

/** A new random master key in its text form (what development writes into the data directory). */
export function newMasterKeyText(): string {
  return randomBytes(MASTER_KEY_BYTES).toString("base64");
}

/**
 * Seals a secret. `context` (for example the endpoint id) is authenticated
 * with it, so a sealed secret copied onto another endpoint does not open.
 */
export function encryptSecret(plaintext: string, keyring: Keyring, context = ""): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", keyring.primary.bytes, iv);
  cipher.setAAD(Buffer.from(`${FORMAT}.${keyring.primary.id}.${context}`));
  const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  const sealed = Buffer.concat([iv, ciphertext, cipher.getAuthTag()]);
  return `${FORMAT}.${keyring.primary.id}.${sealed.toString("base64url")}`;
}

function parseSealed(stored: string): { keyId: string; iv: Buffer; ciphertext: Buffer; tag: Buffer } {
  const parts = stored.split(".");
  if (parts.length !== 3 || parts[0] !== FORMAT || !/^[A-Za-z0-9_-]+$/.test(parts[2]!)) {
    throw new SecretCryptoError("secret_malformed", "The stored secret is not in a known sealed form.");
  }
  const sealed = Buffer.from(parts[2]!, "base64url");
  if (sealed.length < IV_BYTES + TAG_BYTES) throw new SecretCryptoError("secret_malformed", "The stored secret is too short.");
  return {
    keyId: parts[1]!,
    iv: sealed.subarray(0, IV_BYTES),
    ciphertext: sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES),
    tag: sealed.subarray(sealed.length - TAG_BYTES),
  };
}

function keyById(keyring: Keyring, id: string): MasterKey | undefined {
  return [keyring.primary, ...(keyring.previous ?? [])].find((key) => key.id === id);
}

/** Opens a sealed secret; a changed byte, a wrong context or an unknown key is a typed error, never garbage. */
export function decryptSecret(stored: string, keyring: Keyring, context = ""): string {
  const { keyId, iv, ciphertext, tag } = parseSealed(stored);
  const key = keyById(keyring, keyId);
  if (!key) throw new SecretCryptoError("secret_key_unknown", `The stored secret was sealed with key ${keyId}, which is not configured.`);
  const decipher = createDecipheriv("aes-256-gcm", key.bytes, iv, { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(`${FORMAT}.${keyId}.${context}`));
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString("utf8");
  } catch {
    throw new SecretCryptoError("secret_tampered", "The stored secret failed its integrity check.");
  }
}

/** True when a sealed secret was made with a key other than the primary one (re-seal it after a key rotation). */
export function needsReencryption(stored: string, keyring: Keyring): boolean {
  return parseSealed(stored).keyId !== keyring.primary.id;
}
