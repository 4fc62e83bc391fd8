import type { MessageInitShape } from "@bufbuild/protobuf";
import { EventService, type EventSchema, type PositionedEventSchema, type ServiceImplementation } from "@rms/proto";
import { BSON, type ResumeToken } from "mongodb";
import { defineRpcs, found, rpc, type PresentedKeyCheck } from "../grpc/define-rpc.js";
import { pageOf } from "../grpc/list-request.js";
import { objectIdOf, type EventLog, type PositionedEvent } from "./log.js";
import type { StoredEvent } from "./model.js";
import { eventData } from "./render.js";
import type { EventStore } from "./store.js";
import { createdBoundsOf, logReadOf, objectFilterOf, typeFilterOf } from "./validation.js";

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

function positioned(event: PositionedEvent): MessageInitShape<typeof PositionedEventSchema> {
  return { event: toMessage(event), position: BigInt(event.pos), objectId: objectIdOf(event) };
}

/** A watch's resume token as it crosses gRPC (BSON bytes), and back. */
const tokenBytes = (token: ResumeToken | null) => (token ? BSON.serialize(token as BSON.Document) : new Uint8Array());
const tokenOf = (bytes: Uint8Array): ResumeToken | null => (bytes.length === 0 ? null : (BSON.deserialize(bytes) as ResumeToken));

/** The EventService RPCs (grpc/define-rpc.ts): reads run alongside the presented-key check, whose refusal drops their result. */
export function eventService(store: EventStore, log: EventLog, checkKey: PresentedKeyCheck): ServiceImplementation<typeof EventService> {
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
        const object = objectFilterOf(request.object, request.sequence, {
          type: request.type,
          types: request.types,
          created,
          deliverySuccess: request.deliverySuccess,
        });
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
    readEventLog: rpc.read({
      parse: logReadOf,
      load: ({ start, limit, filter, afterClusterTime }, { tenant, budget }) => log.read(tenant, start, limit, filter, afterClusterTime, budget),
      reply: (read) => ({ events: read.events.map(positioned), through: BigInt(read.through), head: BigInt(read.head) }),
    }),
    // The gateway's feed (docs/streams.md, "Fan-out"): every tenant's events, so no tenant or presented key.
    async *watchEvents(request, context) {
      for await (const message of log.watch(tokenOf(request.resumeToken), context.signal)) {
        yield {
          events: message.documents.map((event) => ({ accountId: event.account, positioned: positioned(event) })),
          resumeToken: tokenBytes(message.resumeToken),
          clusterTime: message.clusterTime,
        };
      }
    },
  });
}
