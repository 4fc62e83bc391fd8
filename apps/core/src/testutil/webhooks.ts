import { randomBytes } from "node:crypto";
import type { Db } from "mongodb";
import type { Tenant } from "../caller.js";
import { newId } from "../ids.js";
import { WEBHOOK_ENDPOINTS_COLLECTION, type DeliveryEndpoint } from "../webhook-deliveries/model.js";
import { encryptSecret, masterKey, newEndpointSecret, type Keyring } from "../webhooks/secret.js";

/** A keyring with a fresh random master key, as RMS_SECRET_KEY would give. */
export function testKeyring(): Keyring {
  return { primary: masterKey(randomBytes(32)) };
}

export interface TestEndpoint {
  readonly doc: DeliveryEndpoint;
  /** The clear secrets, newest first, as the create and rotate answers showed them. */
  readonly secrets: string[];
}

/**
 * Writes an endpoint document directly, secrets sealed as the endpoints kind seals them (with the
 * endpoint id as context): core-level delivery tests need endpoints, not the endpoints API.
 */
export async function insertEndpoint(
  db: Db,
  keyring: Keyring,
  tenant: Tenant,
  fields: { url: string; enabled_events?: string[]; status?: "enabled" | "disabled"; secrets?: { secret: string; expires_at: number | null }[] },
): Promise<TestEndpoint> {
  const id = newId("we");
  const secrets = fields.secrets ?? [{ secret: newEndpointSecret(), expires_at: null }];
  const doc: DeliveryEndpoint = {
    _id: id,
    account: tenant.account,
    livemode: tenant.livemode,
    url: fields.url,
    enabled_events: fields.enabled_events ?? ["*"],
    status: fields.status ?? "enabled",
    secrets: secrets.map((s) => ({ sealed: encryptSecret(s.secret, keyring, id), expires_at: s.expires_at })),
  };
  await db.collection<DeliveryEndpoint>(WEBHOOK_ENDPOINTS_COLLECTION).insertOne(doc);
  return { doc, secrets: secrets.map((s) => s.secret) };
}
