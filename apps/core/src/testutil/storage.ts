import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import type { Collection, Db } from "mongodb";
import { inject } from "vitest";
import type { Tenant } from "../caller.js";
import { newId } from "../ids.js";
import { openClient } from "../storage/client-options.js";
import type { TenantDocument } from "../storage/documents.js";
import type { KeySlot } from "../storage/key-slot.js";
import type { OutboxEvent } from "../storage/outbox.js";

/**
 * A made-up object kind for the storage mechanisms' tests: they are generic, so they are
 * tested on a document that is not a resource.
 */
export type ThingEvent = OutboxEvent<"thing.created" | "thing.changed" | "thing.deleted", { id?: string; n: number; color: string }>;
export interface ThingDocument extends TenantDocument<ThingEvent>, KeySlot {
  created: number;
  n: number;
  color: string;
}

/** A test file's own database (opened as core opens its own) with one `things` collection, dropped by `close`. */
export async function thingsCollection(): Promise<{ db: Db; things: Collection<ThingDocument>; close(): Promise<void> }> {
  const client = await openClient(inject("mongoUri")).connect();
  const db = client.db(testDatabaseName("storage"));
  return {
    db,
    things: db.collection<ThingDocument>("things"),
    async close() {
      await db.dropDatabase();
      await client.close();
    },
  };
}

let accounts = 0;
/** A tenant no other test uses. */
export function newTenant(livemode = false): Tenant {
  return { account: `acct_storage${process.pid}x${++accounts}`, livemode };
}

/** A live thing of the tenant, as an insert would store it (no outbox entries, no idempotency key). */
export function thing(tenant: Tenant, fields: Partial<Pick<ThingDocument, "n" | "color">> = {}, nowMs = Date.now()): ThingDocument {
  const id = newId("res", nowMs);
  return {
    _id: id,
    account: tenant.account,
    livemode: tenant.livemode,
    n: fields.n ?? 0,
    color: fields.color ?? "red",
    created: Math.floor(nowMs / 1000),
    version: 0,
    idempotency: id,
    request_hash: null,
    pending_events: [],
  };
}
