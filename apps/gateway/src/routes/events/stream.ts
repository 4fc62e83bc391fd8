import { tenantKey } from "@rms/positions";
import { ID_PREFIXES, ID_SUFFIX_CHARS, RpcError, type PositionedEvent } from "@rms/proto";
import type { CoreClients } from "../../core.js";
import { ApiError } from "../../errors.js";
import type { Params } from "../../parsing/body.js";
import { optionalString } from "../../parsing/params.js";
import type { CatchUpReader } from "../../streams/connection.js";
import type { FeedSource } from "../../streams/feed.js";
import { streamItem, type StreamItem } from "../../streams/hub.js";
import { serveStream, streamServices, streamStartOf } from "../../streams/open.js";
import type { EventValue } from "../../streams/services.js";
import { sseEventSchema, sseFrame } from "../../streams/sse.js";
import { defineStreamOperation } from "../../engine/operation.js";
import { typesParam } from "./filters.js";
import { EVENT_FILTERS, EventObject, TYPES_FILTER_MAX } from "./objects.js";

const EVENT_ID = new RegExp(`^evt_[0-9A-Za-z]{${ID_SUFFIX_CHARS}}$`);
const OBJECT_ID = new RegExp(`^(${ID_PREFIXES.join("|")})_[0-9A-Za-z]{${ID_SUFFIX_CHARS}}$`);
/** Positions one catch-up read examines. */
const READ_LIMIT = 200;

/** An event as a stream sends it: `id`, `event` (its type) and `data` (the event object, as GET /v1/events/{id} answers it). */
export function eventItem(accountId: string, positioned: PositionedEvent): StreamItem<EventValue> {
  const event = positioned.event!;
  return streamItem(
    tenantKey({ account: accountId, livemode: event.livemode }),
    Number(positioned.position),
    { type: event.type, objectId: positioned.objectId },
    () => sseFrame(event.id, event.type, JSON.stringify(EventObject.render(event))),
  );
}

/** The gateway's one feed of events: core's WatchEvents, without a deadline, resumed by its token (docs/streams.md). */
export function eventFeedSource(core: CoreClients): FeedSource<EventValue> {
  return async function* (token, signal) {
    for await (const message of core.events.watchEvents({ resumeToken: token ?? new Uint8Array() }, { signal, timeoutMs: Number.POSITIVE_INFINITY })) {
      yield {
        items: message.events.map((watched) => eventItem(watched.accountId, watched.positioned!)),
        token: message.resumeToken.length > 0 ? message.resumeToken : null,
        clusterTime: message.clusterTime,
      };
    }
  };
}

/** True for core's answer that a watch cannot resume from its token. */
export const eventTokenLost = (error: unknown) => error instanceof RpcError && error.code === "resume_token_lost";

/** The stream's filter: `types[]` (exact, or a prefix ending in `*`) and `object`. */
interface EventStreamFilter {
  readonly types: string[];
  readonly object: string;
}

function filterOf(params: Params): EventStreamFilter {
  const types = typesParam(params);
  if (types.length > TYPES_FILTER_MAX) throw new ApiError("parameter_invalid", `Invalid types: at most ${TYPES_FILTER_MAX} types.`, { param: "types" });
  for (const type of types)
    if (type.length === 0 || type.length > 100) throw new ApiError("parameter_invalid", "Invalid types: each is 1 to 100 characters.", { param: "types" });
  const object = optionalString(params, "object") ?? "";
  if (object !== "" && !OBJECT_ID.test(object))
    throw new ApiError("parameter_invalid", "Invalid object: must be an object id (res_..., job_..., we_...).", { param: "object" });
  return { types, object };
}

/** The live filter, as core's catch-up read applies it (apps/core/src/events/log.ts, `matches`). */
function passes(filter: EventStreamFilter): (value: EventValue) => boolean {
  const exact = new Set(filter.types.filter((t) => !t.endsWith("*")));
  const prefixes = filter.types.filter((t) => t.endsWith("*")).map((t) => t.slice(0, -1));
  return ({ type, objectId }) =>
    (filter.object === "" || objectId === filter.object) &&
    ((exact.size === 0 && prefixes.length === 0) || exact.has(type) || prefixes.some((p) => type.startsWith(p)));
}

/** GET /v1/events/stream: the account's events in this key's mode as Server-Sent Events (CONTRACT.md section 14). */
export const streamEvents = defineStreamOperation({
  method: "GET",
  path: "/v1/events/stream",
  summary: "Stream events",
  scope: "events:read",
  parameters: {
    types: { ...EVENT_FILTERS.types, example: ["resource.*"] },
    object: EVENT_FILTERS.object,
    starting_after: {
      example: undefined,
      schema: {
        type: "string",
        pattern: EVENT_ID.source,
        description:
          "Start after this event: every later one comes, those made while the client was away included. The `Last-Event-ID` header (sent by a " +
          "reconnecting EventSource) wins over it. Absent: from the connection on.",
      },
    },
  },
  success: {
    status: 200,
    description:
      "`text/event-stream`: each event as `id: evt_...`, `event: <type>`, `data: <the event object>`, in the order their copies committed (oldest " +
      "first), once each; a `: keep-alive` comment every 15 s; the server ends the stream after an hour (resume with `Last-Event-ID`). A key holds " +
      "at most 10 streams.",
    object: EventObject as never,
  },
  errors: ["parameter_invalid", "too_many_streams"],
  stream: {
    streamsBody: false,
    successContent: {
      content: {
        "text/event-stream": {
          schema: sseEventSchema({
            id: EVENT_ID,
            event: { type: "string", description: "The event's `type`." },
            object: EventObject.name,
            description:
              "One Server-Sent Event: `id: evt_...`, `event: <type>`, `data: <the Event object as JSON>`, then a blank line; comment lines (`: " +
              "keep-alive`) between.",
          }),
        },
      },
      headers: {},
    },
    async handle(input, deps) {
      const services = streamServices(deps);
      const filter = filterOf(input.params);
      const after = streamStartOf(input, EVENT_ID, "an event");
      const tenant = { accountId: input.tenant.accountId, livemode: input.tenant.livemode };
      const read: CatchUpReader<EventValue> = async (start, afterClusterTime) => {
        const from =
          start === null
            ? { case: undefined }
            : "position" in start
              ? { case: "afterPosition" as const, value: BigInt(start.position) }
              : { case: "afterEvent" as const, value: start.id };
        try {
          const page = await input.core.events.readEventLog(
            { tenant, after: from, limit: READ_LIMIT, types: filter.types, object: filter.object, afterClusterTime },
            { metadata: input.metadata },
          );
          return { items: page.events.map((positioned) => eventItem(tenant.accountId, positioned)), through: Number(page.through), head: Number(page.head) };
        } catch (error) {
          // The cursor came from the header or the query: the refusal names the one the client sent.
          if (after && error instanceof RpcError && error.param === "starting_after")
            throw new ApiError("parameter_invalid", error.message.replace("starting_after", after.param), { param: after.param });
          throw error;
        }
      };
      await serveStream(input, services, { kind: "events", channel: services.events, read, passes: passes(filter), start: after ? { id: after.id } : null });
    },
  },
});
