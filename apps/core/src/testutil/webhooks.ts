import { randomBytes } from "node:crypto";
import type { Db } from "mongodb";
import type { Tenant } from "../caller.js";
import { newId } from "../ids.js";
import { WEBHOOK_ENDPOINTS_COLLECTION, type DisablingEndpoint } from "../webhook-deliveries/model.js";
import { encryptSecret, masterKey, type Keyring } from "../webhooks/secret.js";
import { newEndpointSecret, PRIVATE_KEY_PREFIX, publicKeyOf } from "@rms/webhook-signing";

/** A keyring with a fresh random master key, as RMS_SECRET_KEY would give. */
export function testKeyring(): Keyring {
  return { primary: masterKey(randomBytes(32)) };
}

export interface TestEndpoint {
  readonly doc: DisablingEndpoint;
  /** The clear secrets, newest first, as the create and rotate answers showed them. */
  readonly secrets: string[];
}

/**
 * Writes an endpoint document directly, secrets sealed as the endpoints kind seals them (with the
 * endpoint id as context; a `whsk_` key as a `v1a` key): core-level delivery tests need endpoints, not the
 * endpoints API.
 */
export async function insertEndpoint(
  db: Db,
  keyring: Keyring,
  tenant: Tenant,
  fields: { url: string; enabled_events?: string[]; status?: "enabled" | "disabled"; secrets?: { secret: string; expires_at: number | null }[] },
): Promise<TestEndpoint> {
  const id = newId("we");
  const secrets = fields.secrets ?? [{ secret: newEndpointSecret(), expires_at: null }];
  // A `whsk_` private key is a `v1a` key, stored with its public key as the endpoints kind stores it.
  const scheme = (secret: string) => (secret.startsWith(PRIVATE_KEY_PREFIX) ? { scheme: "v1a" as const, public_key: publicKeyOf(secret) } : {});
  const doc: DisablingEndpoint = {
    _id: id,
    account: tenant.account,
    livemode: tenant.livemode,
    url: fields.url,
    enabled_events: fields.enabled_events ?? ["*"],
    status: fields.status ?? "enabled",
    secrets: secrets.map((s) => ({ sealed: encryptSecret(s.secret, keyring, id), expires_at: s.expires_at, ...scheme(s.secret) })),
    description: null,
    metadata: [],
    created: Math.floor(Date.now() / 1000),
    version: 0,
  };
  await db.collection<DisablingEndpoint & { pending_events: unknown[] }>(WEBHOOK_ENDPOINTS_COLLECTION).insertOne({ ...doc, pending_events: [] });
  return { doc, secrets: secrets.map((s) => s.secret) };
}
