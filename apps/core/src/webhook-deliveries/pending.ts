import type { Collection } from "mongodb";
import type { FannedOutEvent } from "./model.js";

/**
 * Takes `endpoint` out of an event's `pending_endpoints` (a 2xx, or the endpoint is gone) and, in the same
 * single-document update, removes `undelivered` when no endpoint is left, so the flag the events list's
 * `delivery_success` index reads never disagrees with the array. Repeating it changes nothing (the filter
 * matches only while the endpoint is pending). The endpoint id goes in as a literal, never as a path.
 */
export async function pullPendingEndpoint(events: Collection<FannedOutEvent>, eventId: string, endpoint: string): Promise<void> {
  await events.updateOne({ _id: eventId, pending_endpoints: endpoint }, [
    { $set: { pending_endpoints: { $filter: { input: "$pending_endpoints", cond: { $ne: ["$$this", { $literal: endpoint }] } } } } },
    { $set: { undelivered: { $cond: [{ $gt: [{ $size: "$pending_endpoints" }, 0] }, true, "$$REMOVE"] } } },
  ]);
}
