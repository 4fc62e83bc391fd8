/** Resource status as stored and as the public API spells it. */
export const RESOURCE_STATUSES = ["active", "paused", "archived"] as const;
export type ResourceStatusName = (typeof RESOURCE_STATUSES)[number];

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

/** A pending event embedded in the document it describes (the outbox; docs/architecture.md, data rule 2). */
export interface PendingEvent {
  _id: string;
  type: "resource.created" | "resource.updated" | "resource.deleted";
  created: number;
  account: string;
  livemode: boolean;
  object: ResourceState;
  /** Old values of the changed fields only (resource.updated). */
  previous_attributes: Partial<Omit<ResourceState, "id" | "created">> | null;
  request: { id: string | null; idempotency_key: string | null };
}

/** The stored document of one resource. */
export interface ResourceDocument extends ResourceState {
  _id: string;
  account: string;
  livemode: boolean;
  /** Optimistic-concurrency version: every update matches on it and increments it. */
  version: number;
  /**
   * Idempotency: `<account>/<mode>/<key>` of the creating request, or the resource's own id when the
   * request had no key (so the unique index never sees two equal values). With `request_hash`,
   * the fingerprint of the creating request, so a different request under the same key is refused.
   */
  idempotency: string;
  request_hash: string | null;
  /** Tombstone: reads treat the resource as gone; the event relay removes it once its event is out. */
  deleted?: true;
  pending_events: PendingEvent[];
}
