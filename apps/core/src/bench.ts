/**
 * What the bench's floors build by hand, as `@rms/core/bench` (bench/src: the writes an import chunk, a bulk update
 * and the relay make, measured without the stack around them, and a delivery's signature). No production code
 * imports it; it is not the API of core (which is `startCore`, `startWorker` and their configs).
 */
export { importedResource, importedResourceId, updateDecision } from "./resources/batch.js";
export { eventExpiresAt, pullRelayed } from "./storage/relay.js";
export { signatureHeader } from "@rms/webhook-signing";
export { WEBHOOK_LANES_COLLECTION } from "./webhook-deliveries/lanes.js";
export { DELIVERY_QUEUE, WEBHOOK_DELIVERIES_COLLECTION } from "./webhook-deliveries/model.js";
