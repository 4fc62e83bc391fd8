import type { MessageInitShape } from "@bufbuild/protobuf";
import { EventService, type EventSchema, type ServiceImplementation } from "@rms/proto";
import { defineRpcs, found, rpc, type PresentedKeyCheck } from "../grpc/define-rpc.js";
import { pageOf } from "../grpc/list-request.js";
import type { StoredEvent } from "./model.js";
import { eventData } from "./render.js";
import type { EventStore } from "./store.js";
import { createdBoundsOf, objectFilterOf, typeFilterOf } from "./validation.js";

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

/** The EventService RPCs (grpc/define-rpc.ts): reads run alongside the presented-key check, whose refusal drops their result. */
export function eventService(store: EventStore, checkKey: PresentedKeyCheck): ServiceImplementation<typeof EventService> {
  return defineRpcs(EventService, checkKey, {
    getEvent: rpc.read({
      load: ({ id }, { tenant, budget }) => store.get(tenant, id, budget),
      reply: (event, { id }) => ({ event: toMessage(found(event, "event", id)) }),
    }),

    listEvents: rpc.read({
      parse: (request) => {
        const paging = pageOf(request, "evt", "event");
        const type = typeFilterOf(request.type, request.types);
        const created = createdBoundsOf(request.created);
        const object = objectFilterOf(request.object, request.sequence, { type: request.type, types: request.types, created, deliverySuccess: request.deliverySuccess });
        return {
          ...paging,
          ...(type ? { type } : {}),
          created,
          ...(request.deliverySuccess !== undefined ? { deliverySuccess: request.deliverySuccess } : {}),
          ...(object ? { object } : {}),
        };
      },
      load: (query, { tenant, budget }) => store.list(tenant, query, budget),
      reply: (page) => ({ events: page.items.map(toMessage), hasMore: page.hasMore }),
    }),
  });
}
