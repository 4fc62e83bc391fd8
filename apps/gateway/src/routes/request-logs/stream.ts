import { tenantKey, watchPositioned, ResumeTokenLost } from "@rms/positions";
import { BSON, type ResumeToken } from "mongodb";
import { ApiError } from "../../errors.js";
import type { RequestLogDocument, RequestLogFilter, RequestLogStore, SourceFilter } from "../../request-logs/store.js";
import type { CatchUpReader } from "../../streams/connection.js";
import type { FeedSource } from "../../streams/feed.js";
import { streamItem, type StreamItem } from "../../streams/hub.js";
import { serveStream, streamServices, streamStartOf } from "../../streams/open.js";
import { sseEventSchema, sseFrame } from "../../streams/sse.js";
import { defineStreamOperation } from "../../engine/operation.js";
import { requestLogFilter, sourceParam } from "./list.js";
import { REQUEST_LOG_LIST_PARAMS, RequestLogObject } from "./objects.js";

const REQUEST_ID = /^req_[0-9A-Za-z]{24}$/;
/** Positions one catch-up read examines. */
const READ_LIMIT = 200;

type Positioned = RequestLogDocument & { pos: number };

/** A request log as a stream sends it: `id: req_...`, `event: request_log`, `data: <the request log object>`. */
export function requestLogItem(record: Positioned): StreamItem<RequestLogDocument> {
  return streamItem(tenantKey(record), record.pos, record as RequestLogDocument, () =>
    sseFrame(record._id, "request_log", JSON.stringify(RequestLogObject.render(record))),
  );
}

/** The gateway's one feed of its request logs: its own change stream of them, resumed by its token (docs/streams.md). */
export function requestLogFeedSource(store: RequestLogStore): FeedSource<RequestLogDocument> {
  return async function* (token, signal) {
    const resumeToken = token ? (BSON.deserialize(token) as ResumeToken) : null;
    for await (const message of watchPositioned(store.collection, resumeToken, signal)) {
      yield {
        items: message.documents.map((record) => requestLogItem(record as Positioned)),
        token: message.resumeToken ? new Uint8Array(BSON.serialize(message.resumeToken as BSON.Document)) : null,
        clusterTime: message.clusterTime,
      };
    }
  };
}

export const requestLogTokenLost = (error: unknown) => error instanceof ResumeTokenLost;

/** The list's filters as a stream applies them, to each record (any combination: the catch-up reads every record of the source). */
function passes(filter: RequestLogFilter, source: SourceFilter): (record: RequestLogDocument) => boolean {
  const wanted = Object.entries(filter).filter(([, value]) => value !== undefined) as [keyof RequestLogFilter, unknown][];
  return (record) => (source === "all" || (record.source ?? "api") === source) && wanted.every(([field, value]) => record[field] === value);
}

/** GET /v1/request_logs/stream: the account's requests in this key's mode as Server-Sent Events, as they are recorded. */
export const streamRequestLogs = defineStreamOperation({
  method: "GET",
  path: "/v1/request_logs/stream",
  summary: "Stream request logs",
  // Read from the gateway's own records: no core call re-checks its key, so core verifies the key when it opens.
  local: true,
  scope: "request_logs:read",
  parameters: {
    status: REQUEST_LOG_LIST_PARAMS.status,
    method: REQUEST_LOG_LIST_PARAMS.method,
    path: REQUEST_LOG_LIST_PARAMS.path,
    api_key: REQUEST_LOG_LIST_PARAMS.api_key,
    idempotency_key: REQUEST_LOG_LIST_PARAMS.idempotency_key,
    error_code: REQUEST_LOG_LIST_PARAMS.error_code,
    source: REQUEST_LOG_LIST_PARAMS.source,
    starting_after: {
      example: undefined,
      schema: {
        type: "string",
        pattern: REQUEST_ID.source,
        description:
          "Start after this request log: every later one comes, those recorded while the client was away included. The `Last-Event-ID` header wins " +
          "over it. Absent: from the connection on.",
      },
    },
  },
  success: {
    status: 200,
    description:
      "`text/event-stream`: each request log as `id: req_...`, `event: request_log`, `data: <the request log object>`, in the order they were recorded " +
      "(oldest first), once each; filters as the list's (any combination), the dashboard's own only with `source`; a `: keep-alive` comment every 15 " +
      "s; the server ends the stream after an hour. A key holds at most 10 streams.",
    object: RequestLogObject as never,
  },
  errors: ["parameter_invalid", "too_many_streams"],
  stream: {
    streamsBody: false,
    successContent: {
      content: {
        "text/event-stream": {
          schema: sseEventSchema({
            id: REQUEST_ID,
            event: { type: "string", const: "request_log" },
            object: RequestLogObject.name,
            description:
              "One Server-Sent Event: `id: req_...`, `event: request_log`, `data: <the RequestLog object as JSON>`, then a blank line; comment lines " +
              "(`: keep-alive`) between.",
          }),
        },
      },
      headers: {},
    },
    async handle(input, deps) {
      const services = streamServices(deps);
      const channel = services.requestLogs;
      const store = deps.local?.requestLogs;
      if (!channel || !store) throw ApiError.unavailable();
      const filter = requestLogFilter(input.params, true);
      const source = sourceParam(input.params);
      const after = streamStartOf(input, REQUEST_ID, "a request");
      const tenant = { account: input.tenant.accountId, livemode: input.tenant.livemode };
      const keep = passes(filter, source);
      const read: CatchUpReader<RequestLogDocument> = async (start, afterClusterTime) => {
        const page = await store.readLog(tenant, start, source, READ_LIMIT, afterClusterTime).catch((error: unknown) => {
          throw ApiError.unavailable(error);
        });
        if (!page)
          throw new ApiError(
            "parameter_invalid",
            `Invalid ${after?.param ?? "starting_after"}: no request log of this account and mode has this id (or it has expired).`,
            {
              param: after?.param ?? "starting_after",
            },
          );
        return { items: page.records.filter(keep).map(requestLogItem), through: page.through, head: page.head };
      };
      await serveStream(input, services, {
        kind: "request_logs",
        channel,
        read,
        passes: keep,
        start: after ? { id: after.id } : null,
      });
    },
  },
});
