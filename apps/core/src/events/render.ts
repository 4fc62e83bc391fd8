import { publicForm } from "../public-form.js";
import type { StoredEvent } from "./model.js";

/**
 * The event's `data` as the contract shows it: the object, `previous_attributes` when the change had any, and
 * `reason` when the event says why (`webhook_endpoint.disabled`).
 */
export function eventData(event: StoredEvent): { object: Record<string, unknown>; previous_attributes?: Record<string, unknown>; reason?: string } {
  const kind = event.type.split(".")[0] ?? null;
  return {
    object: publicForm(event.object, kind),
    ...(event.previous_attributes ? { previous_attributes: publicForm(event.previous_attributes, null) } : {}),
    ...(event.reason !== undefined ? { reason: event.reason } : {}),
  };
}
