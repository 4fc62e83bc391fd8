import { randomBytes, sign, verify } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import {
  decryptSecret,
  encryptSecret,
  masterKey,
  needsReencryption,
  newMasterKeyText,
  parseMasterKey,
  SecretCryptoError,
  signingSchemeOf,
  type Keyring,
} from "./secret.js";
import { isEndpointSecret, newEndpointKeyPair, newEndpointSecret, publicKeyOf, signingKeyOf, verifyingKeyOf } from "@rms/webhook-signing";

const keyA = masterKey(randomBytes(32));
const keyB = masterKey(randomBytes(32));
const ringA: Keyring = { primary: keyA };

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(SecretCryptoError);
    return (error as SecretCryptoError).code;
  }
  return undefined;
}

describe("newEndpointSecret", () => {
  it("is whsec_ + base64 of 32 random bytes, usable by the Standard Webhooks library", () => {
    const secret = newEndpointSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), "base64")).toHaveLength(32);
    expect(isEndpointSecret(secret)).toBe(true);
    expect(() => new Webhook(secret)).not.toThrow();
  });

  it("never repeats", () => {
    expect(new Set(Array.from({ length: 1000 }, newEndpointSecret)).size).toBe(1000);
  });

  it("isEndpointSecret refuses other shapes", () => {
    for (const text of ["", "whsec_", "whsec_abc", `sk_${"A".repeat(43)}=`, `whsec_${"A".repeat(42)}==`]) expect(isEndpointSecret(text), text).toBe(false);
  });
});

describe("encryptSecret / decryptSecret", () => {
  it("round-trips, and the stored form names the key but holds no clear text", () => {
    const secret = newEndpointSecret();
    const stored = encryptSecret(secret, ringA, "we_1");
    expect(stored.startsWith(`enc1.${keyA.id}.`)).toBe(true);
    expect(stored).not.toContain(secret.slice(6, 20));
    expect(decryptSecret(stored, ringA, "we_1")).toBe(secret);
  });

  it("seals the same secret differently each time (fresh iv)", () => {
    const secret = newEndpointSecret();
    expect(encryptSecret(secret, ringA)).not.toBe(encryptSecret(secret, ringA));
  });

  it("refuses a stored secret with any byte changed (secret_tampered)", () => {
    const stored = encryptSecret(newEndpointSecret(), ringA);
    const [format, id, body] = stored.split(".") as [string, string, string];
    const bytes = Buffer.from(body, "base64url");
    for (const index of [0, 12, 20, bytes.length - 1]) {
      const changed = Buffer.from(bytes);
      changed[index] = changed[index]! ^ 0x01;
      expect(
        codeOf(() => decryptSecret(`${format}.${id}.${changed.toString("base64url")}`, ringA)),
        `byte ${index}`,
      ).toBe("secret_tampered");
    }
  });

  it("refuses a secret opened under another context (copied between endpoints)", () => {
    const stored = encryptSecret(newEndpointSecret(), ringA, "we_1");
    expect(codeOf(() => decryptSecret(stored, ringA, "we_2"))).toBe("secret_tampered");
  });

  it("refuses a secret whose key id was swapped to another configured key", () => {
    const stored = encryptSecret(newEndpointSecret(), ringA);
    const swapped = stored.replace(`.${keyA.id}.`, `.${keyB.id}.`);
    expect(codeOf(() => decryptSecret(swapped, { primary: keyB, previous: [keyA] }))).toBe("secret_tampered");
  });

  it("refuses malformed stored text and unknown keys", () => {
    expect(codeOf(() => decryptSecret("whsec_plain", ringA))).toBe("secret_malformed");
    expect(codeOf(() => decryptSecret(`enc1.${keyA.id}.AAAA`, ringA))).toBe("secret_malformed");
    expect(codeOf(() => decryptSecret(`enc2.${keyA.id}.${"A".repeat(64)}`, ringA))).toBe("secret_malformed");
    expect(codeOf(() => decryptSecret(encryptSecret("x", { primary: keyB }), ringA))).toBe("secret_key_unknown");
  });

  it("rotates master keys: old secrets open with the old key kept as previous, new ones use the primary", () => {
    const secret = newEndpointSecret();
    const old = encryptSecret(secret, ringA);
    const rotated: Keyring = { primary: keyB, previous: [keyA] };
    expect(needsReencryption(old, rotated)).toBe(true);
    expect(decryptSecret(old, rotated)).toBe(secret);
    const resealed = encryptSecret(decryptSecret(old, rotated), rotated);
    expect(needsReencryption(resealed, rotated)).toBe(false);
    expect(decryptSecret(resealed, { primary: keyB })).toBe(secret);
  });
});

describe("master keys", () => {
  it("parses hex and base64, with a stable id that is not the key", () => {
    const bytes = randomBytes(32);
    const fromHex = parseMasterKey(bytes.toString("hex"));
    const fromBase64 = parseMasterKey(bytes.toString("base64"));
    expect(fromHex.bytes.equals(bytes)).toBe(true);
    expect(fromBase64.id).toBe(fromHex.id);
    expect(fromHex.id).toMatch(/^[A-Za-z0-9_-]{8}$/);
    expect(bytes.toString("base64url")).not.toContain(fromHex.id);
    expect(parseMasterKey(newMasterKeyText()).bytes).toHaveLength(32);
  });

  it("refuses keys of the wrong size or shape (secret_key_invalid)", () => {
    for (const text of ["", "abc", "00".repeat(31), randomBytes(31).toString("base64"), randomBytes(48).toString("base64")]) {
      expect(
        codeOf(() => parseMasterKey(text)),
        text,
      ).toBe("secret_key_invalid");
    }
    expect(codeOf(() => masterKey(randomBytes(16)))).toBe("secret_key_invalid");
  });
});

describe("v1a key pairs", () => {
  it("are Ed25519: whsk_ + base64 of the 32-byte seed, whpk_ + base64 of the 32-byte public key, each pair its own", () => {
    const pair = newEndpointKeyPair();
    expect(pair.privateKey).toMatch(/^whsk_[A-Za-z0-9+/]{43}=$/);
    expect(pair.publicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(pair.publicKey.slice(5), "base64")).toHaveLength(32);
    expect(publicKeyOf(pair.privateKey)).toBe(pair.publicKey);
    expect(newEndpointKeyPair().publicKey).not.toBe(pair.publicKey);
    // What the private key signs, the public key alone verifies (node:crypto, as a receiver would).
    const message = Buffer.from("evt_1.1700000000.{}");
    const signature = sign(null, message, signingKeyOf(pair.privateKey));
    expect(verify(null, message, verifyingKeyOf(pair.publicKey), signature)).toBe(true);
    expect(verify(null, message, verifyingKeyOf(newEndpointKeyPair().publicKey), signature)).toBe(false);
  });

  it("seal and open like a whsec_ secret, bound to their endpoint", () => {
    const { privateKey } = newEndpointKeyPair();
    const sealed = encryptSecret(privateKey, ringA, "we_1");
    expect(sealed).not.toContain(privateKey.slice(5));
    expect(decryptSecret(sealed, ringA, "we_1")).toBe(privateKey);
    expect(codeOf(() => decryptSecret(sealed, ringA, "we_2"))).toBe("secret_tampered");
  });

  it("refuse text that is not a key of their kind", () => {
    expect(() => signingKeyOf(newEndpointSecret())).toThrow();
    expect(() => verifyingKeyOf("whpk_AAAA")).toThrow();
    expect(signingSchemeOf(undefined)).toEqual({ signature_scheme: "v1", public_key: null });
    expect(signingSchemeOf({ scheme: "v1a", public_key: "whpk_x" })).toEqual({ signature_scheme: "v1a", public_key: "whpk_x" });
  });
});
