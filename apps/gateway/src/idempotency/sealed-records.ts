import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";

/**
 * Encryption of the recorded answers of operations whose answer carries a secret (a webhook endpoint's
 * signing secret in its create and rotate answers): the record must replay the answer byte for byte
 * for 24 hours, and the secret must not sit in the database in clear meanwhile.
 *
 * AES-256-GCM under a key derived (HKDF-SHA256) from the gateway's own core credential, which every
 * gateway of an installation has and the database never holds. The record's scope (account, mode,
 * Idempotency-Key) is the associated data, so a sealed answer moved onto another record does not open.
 */
export interface RecordSealer {
  seal(body: Buffer, scope: string): Buffer;
  /** Throws when the body does not open (tampered, moved, or sealed under another credential). */
  open(sealed: Buffer, scope: string): Buffer;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;

function sealerWith(key: Buffer): RecordSealer {
  return {
    seal(body, scope) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      cipher.setAAD(Buffer.from(scope, "utf8"));
      return Buffer.concat([iv, cipher.update(body), cipher.final(), cipher.getAuthTag()]);
    },
    open(sealed, scope) {
      if (sealed.length < IV_BYTES + TAG_BYTES) throw new Error("sealed record too short");
      const decipher = createDecipheriv("aes-256-gcm", key, sealed.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(scope, "utf8"));
      decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
      return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)), decipher.final()]);
    },
  };
}

/** The sealer of an installation: its key derived from the gateway's credential (the same on every gateway). */
export function recordSealer(credential: string): RecordSealer {
  return sealerWith(Buffer.from(hkdfSync("sha256", Buffer.from(credential, "utf8"), Buffer.from("rms idempotency records"), Buffer.from("aes-256-gcm v1"), 32)));
}

/** A sealer with a random key: records it seals open only in this process (apps built without a credential, in tests). */
export function processRecordSealer(): RecordSealer {
  return sealerWith(randomBytes(32));
}
