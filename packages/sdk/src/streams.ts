import { RMSAPIError, RMSConnectionError, RMSError } from "./errors.js";
import type { WebhookEvent } from "./gen/operations.js";
import type { RequestOptions } from "./options.js";
import type { RequestSender } from "./request.js";
import type { ResponseInfo } from "./response.js";
import { retryableAnswer, retryableFailure, retryAfterMs, retryDelayMs, sleep } from "./retry.js";
import { SseParser } from "./sse.js";
import type { Query, Schemas } from "./types.js";

/**
 * The live streams of events and request logs (`GET /v1/events/stream`, `GET /v1/request_logs/stream`, CONTRACT.md
 * section 14; docs/streams.md): async iterables that reconnect with the last id they received and so resume where
 * they were, whatever ended the connection.
 */

/** What `events.stream` filters on: `types` (exact, or `prefix.*`), one `object`, and where to start (`starting_after`). */
export type EventStreamParams = Query<"streamEvents">;

/** What `requestLogs.stream` filters on: the list's filters, `source`, and where to start (`starting_after`). */
export type RequestLogStreamParams = Query<"streamRequestLogs">;

/** Why and when a stream connects again. */
export interface ReconnectInfo {
  /** Connections in a row that brought nothing (1 after a stream that was delivering). */
  readonly attempt: number;
  /** How long it waits before connecting again. */
  readonly delayMs: number;
  /** What ended the previous connection: the API's answer, or `RMSConnectionError` (a cut, an end, silence). */
  readonly reason: RMSError;
  /** Where it resumes (`Last-Event-ID`); undefined: from the new connection on. */
  readonly lastEventId: string | undefined;
}

/** The options of a stream: a call's options, and two listeners. */
export interface StreamOptions extends RequestOptions {
  /** Told each time a connection is open (its 200, with its `Request-Id`): items made from then on will come. */
  readonly onOpen?: (response: ResponseInfo) => void;
  /** Told before each reconnection. */
  readonly onReconnect?: (info: ReconnectInfo) => void;
}

/** A live stream: every item as it comes, oldest first, across reconnections; `close()` (or `break`) ends it. */
export interface LiveStream<Item> extends AsyncIterable<Item> {
  /** Closes the connection and ends the iteration (done, not an error). */
  close(): void;
  /** The id of the last item received: a cursor for `starting_after` (`rms listen --since`). */
  readonly lastEventId: string | undefined;
  /** The response of the connection open now (or last open). */
  readonly lastResponse: ResponseInfo | undefined;
}

export interface StreamMethods<Params, Item> {
  /** A live stream of the API's objects as they are made, oldest first; it reconnects and resumes by itself. */
  stream(params?: Params, options?: StreamOptions): LiveStream<Item>;
}

export type EventStreamMethods = StreamMethods<EventStreamParams, WebhookEvent>;
export type RequestLogStreamMethods = StreamMethods<RequestLogStreamParams, Schemas["RequestLog"]>;

/** A stream's route, and the list whose newest item anchors a stream that has received nothing yet. */
export interface StreamRoute {
  readonly path: string;
  readonly anchor: { readonly path: string; readonly query: object };
}

export const EVENT_STREAM: StreamRoute = { path: "/v1/events/stream", anchor: { path: "/v1/events", query: { limit: 1 } } };
export const REQUEST_LOG_STREAM: StreamRoute = { path: "/v1/request_logs/stream", anchor: { path: "/v1/request_logs", query: { limit: 1, source: "all" } } };

/** A connection silent this long is taken for dead and replaced: three of the server's 15 s keep-alives missed. */
export const STREAM_IDLE_TIMEOUT_MS = 45_000;

class Closed extends Error {}

/** An answer no reconnection can mend (not an event stream, data that is not JSON): the iteration throws its error. */
class Unrecoverable extends Error {
  constructor(readonly error: RMSError) {
    super(error.message);
  }
}

/** What ended a connection, as an RMSError: the API's answer, or RMSConnectionError for a cut, an end or silence. */
function endOf(reason: unknown): RMSError {
  if (reason instanceof RMSError) return reason;
  const text = reason instanceof Error ? reason.message : String(reason);
  return new RMSConnectionError({ type: "connection_error", message: `The stream's connection ended: ${text}`, cause: reason });
}

/**
 * How long to wait before connecting again after `reason`, or undefined when no retry can help: an answer that is
 * not retryable (400 cursor, 401, 403; `Stripe-Should-Retry: false`), an untrusted certificate, or a first
 * connection that failed `maxNetworkRetries` + 1 times. Backoff with jitter (250 ms to 8 s), never sooner than the
 * answer's `Retry-After` or the stream's `retry:`.
 */
export function reconnectDelayMs(
  reason: RMSError,
  attempt: number,
  state: { readonly everOpen: boolean; readonly maxNetworkRetries: number; readonly serverRetryMs: number | undefined },
  random: () => number = Math.random,
): number | undefined {
  let retryAfter: number | undefined;
  if (reason.statusCode !== undefined) {
    const headers = new Headers(reason.headers);
    if (!retryableAnswer(reason.statusCode, reason.code, headers)) return undefined;
    retryAfter = retryAfterMs(headers);
  } else if (reason instanceof RMSConnectionError && !retryableFailure(reason.cause)) return undefined;
  // Once a stream has been open it keeps trying for as long as it is iterated; the first connection is a call like any.
  if (!state.everOpen && attempt > state.maxNetworkRetries) return undefined;
  return Math.max(retryDelayMs(attempt, undefined, random)!, retryAfter ?? 0, state.serverRetryMs ?? 0);
}

/** The next chunk, or a rejection after `ms` without one. */
function readWithin(reader: ReadableStreamDefaultReader<Uint8Array>, ms: number): Promise<ReadableStreamReadResult<Uint8Array>> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const silent = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`nothing came for ${ms / 1000} s (not even a keep-alive)`)), ms);
  });
  return Promise.race([reader.read(), silent]).finally(() => clearTimeout(timer));
}

/**
 * A stream of `route` with `params`. Resuming: after an item, from its id (`Last-Event-ID`); before any, from the
 * newest item of the route's list read before the connection that ended (so what was made while it reconnected
 * comes too); with `starting_after`, from there.
 */
export function liveStream<Item>(sender: RequestSender, route: StreamRoute, params: object | undefined, options: StreamOptions | undefined): LiveStream<Item> {
  const settled = sender.settle(options);
  const stopper = new AbortController();
  const startingAfter = (params as { starting_after?: unknown } | undefined)?.starting_after;
  let itemCursor = typeof startingAfter === "string" && startingAfter !== "" ? startingAfter : undefined;
  let anchorCursor: string | undefined;
  let lastResponse: ResponseInfo | undefined;
  let started = false;

  const onUserAbort = () => stopper.abort(settled.signal!.reason);
  if (settled.signal?.aborted) onUserAbort();
  else settled.signal?.addEventListener("abort", onUserAbort, { once: true });

  /** The id of the newest item of the route's list, or undefined when there is none. */
  const readAnchor = async (signal: AbortSignal): Promise<string | undefined> => {
    const page = await sender.json<{ data?: { id?: unknown }[] }>({
      method: "GET",
      path: route.anchor.path,
      query: route.anchor.query,
      options: { ...options, signal },
    });
    const id = page.data?.[0]?.id;
    return typeof id === "string" ? id : undefined;
  };

  async function* run(): AsyncGenerator<Item, void, undefined> {
    let everOpen = false;
    let attempt = 0;
    try {
      for (;;) {
        const connection = new AbortController();
        const onStop = () => connection.abort(stopper.signal.reason);
        stopper.signal.addEventListener("abort", onStop, { once: true });
        const parser = new SseParser();
        let reason: RMSError;
        try {
          if (stopper.signal.aborted) throw stopper.signal.reason;
          // Nothing names a position yet: the newest item now anchors what this connection is about to cover.
          const anchor = itemCursor === undefined ? await readAnchor(connection.signal) : undefined;
          const cursor = itemCursor ?? anchorCursor;
          const opened = await sender.open({
            method: "GET",
            path: route.path,
            query: params,
            headers: { Accept: "text/event-stream", ...(cursor !== undefined && cursor !== startingAfter ? { "Last-Event-ID": cursor } : {}) },
            options: { ...options, signal: connection.signal, maxNetworkRetries: 0 },
          });
          const type = opened.headers.get("content-type") ?? "";
          if (!type.startsWith("text/event-stream")) {
            opened.body?.cancel().catch(() => {});
            const message = `The API answered ${route.path} with ${type || "no content type"}, not an event stream.`;
            throw new Unrecoverable(
              new RMSAPIError({ type: "api_error", message, statusCode: opened.status, requestId: opened.info.requestId, headers: opened.info.headers }),
            );
          }
          everOpen = true;
          if (itemCursor === undefined && anchor !== undefined) anchorCursor = anchor;
          lastResponse = opened.info;
          options?.onOpen?.(opened.info);
          if (opened.body === null) throw new Error("the answer has no body");
          const reader = opened.body.getReader();
          const decoder = new TextDecoder();
          for (;;) {
            const { done, value } = await readWithin(reader, STREAM_IDLE_TIMEOUT_MS);
            if (done) throw new Error("the server ended the stream");
            attempt = 0;
            for (const message of parser.push(decoder.decode(value, { stream: true }))) {
              let item: Item;
              try {
                item = JSON.parse(message.data) as Item;
              } catch {
                const text = `The stream ${route.path} carried data that is not JSON.`;
                throw new Unrecoverable(
                  new RMSAPIError({
                    type: "api_error",
                    message: text,
                    statusCode: opened.status,
                    requestId: opened.info.requestId,
                    headers: opened.info.headers,
                  }),
                );
              }
              if (message.lastEventId !== "") itemCursor = message.lastEventId;
              yield item;
              // Closed while the caller held the item: what was read with it stays unread.
              if (stopper.signal.aborted) throw stopper.signal.reason;
            }
          }
        } catch (error) {
          if (stopper.signal.aborted) {
            if (settled.signal?.aborted) throw settled.signal.reason;
            return;
          }
          if (error instanceof Unrecoverable) throw error.error;
          reason = endOf(error);
        } finally {
          stopper.signal.removeEventListener("abort", onStop);
          connection.abort(new Closed("the stream moved on"));
        }
        attempt++;
        const delayMs = reconnectDelayMs(reason, attempt, { everOpen, maxNetworkRetries: settled.maxNetworkRetries, serverRetryMs: parser.retryMs });
        if (delayMs === undefined) throw reason;
        options?.onReconnect?.({ attempt, delayMs, reason, lastEventId: itemCursor ?? anchorCursor });
        try {
          await sleep(delayMs, stopper.signal);
        } catch (error) {
          if (settled.signal?.aborted) throw settled.signal.reason;
          if (stopper.signal.aborted) return;
          throw error;
        }
      }
    } finally {
      stopper.abort(new Closed("the stream is closed"));
      settled.signal?.removeEventListener("abort", onUserAbort);
    }
  }

  return {
    [Symbol.asyncIterator]() {
      if (started) throw new TypeError("A stream is iterated once: call stream() again for another.");
      started = true;
      return run();
    },
    close() {
      stopper.abort(new Closed("the stream is closed"));
      settled.signal?.removeEventListener("abort", onUserAbort);
    },
    get lastEventId() {
      return itemCursor;
    },
    get lastResponse() {
      return lastResponse;
    },
  };
}
