import type { MessageInitShape } from "@bufbuild/protobuf";
import type { EventSchema, EventService, ServiceImplementation } from "@rms/proto";
import type { PresentedKeyCheck } from "../accounts/presented-key.js";
import { errors } from "../errors.js";
import { budgetOf } from "../grpc/budget.js";
import { tenantOf } from "../grpc/call-info.js";
import { pageOf } from "../grpc/list-request.js";
import type { StoredEvent } from "./model.js";
import { eventData } from "./render.js";
import type { EventStore } from "./store.js";
import { createdBoundsOf, typeFilterOf } from "./validation.js";

function toMessage(event: StoredEvent): MessageInitShape<typeof EventSchema> {
  return {
    id: event._id,
    type: event.type,
    created: BigInt(event.created),
    livemode: event.livemode,
    sequence: BigInt(event.sequence ?? 0),
    dataJson: JSON.stringify(eventData(event)),
    ...(event.request.id !== null ? { requestId: event.request.id } : {}),
    ...(event.request.idempotency_key !== null ? { idempotencyKey: event.request.idempotency_key } : {}),
    pendingWebhooks: event.pending_endpoints?.length ?? 0,
  };
}

/** The EventService RPCs: reads run alongside the presented-key check, whose refusal drops their result. */
export function eventService(store: EventStore, checkKey: PresentedKeyCheck): ServiceImplementation<typeof EventService> {
  return {
    async getEvent(request, context) {
      const tenant = tenantOf(request.tenant);
      const budget = budgetOf(context);
      const [event] = await Promise.all([store.get(tenant, request.id, budget), checkKey(context, tenant, budget.db())]);
      if (!event) throw errors.notFound("event", request.id);
      return { event: toMessage(event) };
    },

    async listEvents(request, context) {
      const tenant = tenantOf(request.tenant);
      const paging = pageOf(request, "evt", "event");
      const type = typeFilterOf(request.type, request.types);
      const created = createdBoundsOf(request.created);
      const budget = budgetOf(context);
      const [page] = await Promise.all([
        store.list(
          tenant,
          { ...paging, ...(type ? { type } : {}), created, ...(request.deliverySuccess !== undefined ? { deliverySuccess: request.deliverySuccess } : {}) },
          budget,
        ),
        checkKey(context, tenant, budget.db()),
      ]);
      return { events: page.items.map(toMessage), hasMore: page.hasMore };
    },
  };
}
