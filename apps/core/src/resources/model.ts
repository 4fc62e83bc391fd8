import type { RESOURCES_VOCABULARY, ResourceStatusName } from "@rms/proto";
import type { TenantDocument } from "../storage/documents.js";
import type { KeySlot } from "../storage/key-slot.js";
import type { OutboxEvent } from "../storage/outbox.js";

/** Resource status as stored and as the public API spells it (the wire names of @rms/proto). */
export type { ResourceStatusName };

/** One metadata pair. Stored as a list of pairs so any key is data, never a path or operator. */
export interface MetadataPair {
  k: string;
  v: string;
}

/** The public fields of a resource, as events snapshot them. */
export interface ResourceState {
  id: string;
  name: string;
  status: ResourceStatusName;
  metadata: MetadataPair[];
  created: number;
}

/** A pending event embedded in the resource it describes (the outbox, storage/outbox.ts). */
export type PendingEvent = OutboxEvent<(typeof RESOURCES_VOCABULARY.eventTypes)[number], ResourceState, Partial<Omit<ResourceState, "id" | "created">>>;

/** The stored document of one resource: its state plus the shared storage fields (storage/). */
export interface ResourceDocument extends ResourceState, TenantDocument<PendingEvent>, KeySlot {
  _id: string;
  created: number;
  /**
   * What search matches a name by (filter-query.ts `nameFields`): the name lowercased, and its lowercased prefixes of 2
   * to 10 code points (and the whole, when longer).
   */
  name_lower: string;
  name_prefixes: string[];
}

/**
 * A resource as the answers of retrieve, list and search read it: the fields its public object and message show,
 * and those the tenant and tombstone checks read. The stored name's lower case and prefixes (up to 10 strings),
 * the version and the key's scope stay in the database: a page of 21 documents is decoded from about half the bytes.
 */
export type AnsweredResource = Pick<ResourceDocument, "_id" | "account" | "livemode" | "deleted" | "name" | "status" | "metadata" | "created">;

/** The projection that reads an AnsweredResource. */
export const ANSWER_PROJECTION = { _id: 1, account: 1, livemode: 1, deleted: 1, name: 1, status: 1, metadata: 1, created: 1 } as const satisfies Record<
  keyof AnsweredResource,
  1
>;
