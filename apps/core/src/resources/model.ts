import type { RESOURCES_VOCABULARY, ResourceStatusName } from "@rms/proto";
import type { TenantDocument } from "../storage/documents.js";
import type { IdempotentDocument } from "../storage/idempotent-insert.js";
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
export interface ResourceDocument extends ResourceState, TenantDocument<PendingEvent>, IdempotentDocument {
  _id: string;
  created: number;
  /** What search matches a name by (filter-query.ts `nameFields`): the name lowercased, and its lowercased prefixes of 2 to 10 code points (and the whole, when longer). */
  name_lower: string;
  name_prefixes: string[];
}
