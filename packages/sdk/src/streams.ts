import type { RequestOptions } from "./options.js";
import type { Query, Schemas } from "./types.js";

/**
 * The live streams of events and request logs (`GET /v1/events/stream`, `GET /v1/request_logs/stream`, CONTRACT.md
 * section 14): async iterables that reconnect and resume from the last id by themselves. This API version does not
 * serve them yet; the methods are here with their final shape, and throw until the stream endpoints exist.
 */

/** What `events.stream` filters on: types (exact or `prefix.*`), one object, and where to start. */
export interface EventStreamParams {
  readonly types?: readonly string[];
  readonly object?: string;
  /** Start after this event (as `Last-Event-ID` does); default: from the connection on. */
  readonly starting_after?: string;
}

/** What `requestLogs.stream` filters on: the list's filters, and where to start. */
export type RequestLogStreamParams = Omit<Query<"listRequestLogs">, "limit" | "ending_before" | "created">;

/** A live stream: every item as it comes, oldest first; `close()` ends it. */
export interface LiveStream<Item> extends AsyncIterable<Item> {
  close(): void;
}

/** Thrown by a stream method while the API has no stream endpoint. */
export class StreamUnavailableError extends Error {
  constructor(method: string, path: string) {
    super(`${method} needs ${path}, which this version of the API does not serve yet (server-sent event streams are not released)`);
    this.name = "StreamUnavailableError";
  }
}

export interface StreamMethods<Params, Item> {
  /** A live stream of the API's objects as they are made (not served yet: throws StreamUnavailableError). */
  stream(params?: Params, options?: RequestOptions): LiveStream<Item>;
}

export function unavailableStream<Params, Item>(method: string, path: string): StreamMethods<Params, Item>["stream"] {
  return () => {
    throw new StreamUnavailableError(method, path);
  };
}

export type EventStreamMethods = StreamMethods<EventStreamParams, Schemas["Event"]>;
export type RequestLogStreamMethods = StreamMethods<RequestLogStreamParams, Schemas["RequestLog"]>;
