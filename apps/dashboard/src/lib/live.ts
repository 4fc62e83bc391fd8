import type { Schemas, WebhookEvent } from "@rms/sdk";
import { hashKey, type QueryKey, type UseQueryOptions, type UseQueryResult, useQueries, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import type { Client } from "../api/client";
import { type SharedStream, type StreamState, sharedStream } from "./stream-hub";

/**
 * The dashboard's live parts, in one place (docs/dashboard.md, "Live updates"): what each follows and how. A feed
 * the API streams (events, request logs) is read again when the tab's shared stream brings an item it matches, and
 * polled slowly only while that stream is not open; the others (a job's progress, attempts, delivery statistics) have
 * no stream and are asked again while the tab is visible (TanStack Query's `refetchInterval`, which pauses in a hidden
 * tab).
 */
export type Feed = PolledFeed | StreamedFeed;

type PolledFeed =
  /** One running job's progress. */
  | "job"
  /** The jobs list (a job started elsewhere appears). */
  | "jobs"
  /** An endpoint's attempts, and an event's deliveries and attempts. */
  | "attempts"
  /** Endpoints' delivery statistics (the overview, the webhooks pages). */
  | "endpoint-health";

type StreamedFeed =
  /** Request logs (the list's tail, the overview's failed requests): `requestLogs.stream()`. */
  | "request-logs"
  /** Events (the list, a resource's, the overview's undelivered): `events.stream()`. */
  | "events";

/** How often a polled feed is asked again while the tab is visible (at most once a second: CONTRACT.md section 13). */
export const FEED_INTERVAL_MS: Readonly<Record<PolledFeed, number>> = {
  job: 1_000,
  jobs: 2_000,
  attempts: 1_000,
  "endpoint-health": 30_000,
};

/** How often a streamed feed is asked again while its stream is not open (opening, a server without streams, a key at its limit). */
export const FALLBACK_INTERVAL_MS = 15_000;

/** A shared stream whose items may say that a query's answer changed. */
export interface Follow<Item> {
  /** What is followed (the stream and the filters, as text): another value follows anew. */
  readonly key: string;
  readonly stream: SharedStream<Item>;
  /** Whether an item changes what the query shows; every item does when absent. */
  readonly accept?: (item: Item) => boolean;
}

type RequestLog = Schemas["RequestLog"];

/** The tab's two streams per client: every event of the account, and the API's requests (not the dashboard's own). */
const streams = new WeakMap<Client, { events: SharedStream<WebhookEvent>; requestLogs: SharedStream<RequestLog> }>();
function streamsOf(client: Client) {
  let found = streams.get(client);
  if (!found) {
    found = {
      events: sharedStream((options) => client.events.stream({}, options)),
      requestLogs: sharedStream((options) => client.requestLogs.stream({}, options)),
    };
    streams.set(client, found);
  }
  return found;
}

/** The account's events that match `filter` (`types`, exact or `prefix.*`; one `object`). */
export function followEvents(client: Client, filter: { readonly types?: readonly string[]; readonly object?: string } = {}): Follow<WebhookEvent> {
  return { key: `events ${JSON.stringify(filter)}`, stream: streamsOf(client).events, accept: (event) => eventMatches(event, filter) };
}

export function eventMatches(
  event: Pick<WebhookEvent, "type" | "data">,
  { types, object }: { readonly types?: readonly string[]; readonly object?: string },
): boolean {
  if (types && types.length > 0 && !types.some((t) => (t.endsWith("*") ? event.type.startsWith(t.slice(0, -1)) : event.type === t))) return false;
  return !object || (event.data.object as { id?: unknown }).id === object;
}

/** The filters a request log is matched against (the list's, as the page holds them). */
export type RequestLogFilter = Readonly<Partial<Record<"status" | "method" | "path" | "error_code" | "api_key" | "idempotency_key", string>>>;

/**
 * The API's requests that match `filter`, and `accept`. The stream holds the API's requests only: the dashboard's
 * own never refresh a list, since each refresh is one of them and would bring the next.
 */
export function followRequestLogs(client: Client, filter: RequestLogFilter = {}, accept?: (log: RequestLog) => boolean): Follow<RequestLog> {
  return {
    key: `request-logs ${JSON.stringify(filter)}`,
    stream: streamsOf(client).requestLogs,
    accept: (log) => requestLogMatches(log, filter) && (accept?.(log) ?? true),
  };
}

export function requestLogMatches(
  log: Pick<RequestLog, "status" | "method" | "path" | "error_code" | "api_key" | "idempotency_key">,
  filter: RequestLogFilter,
): boolean {
  const { status, method, path, error_code, api_key, idempotency_key } = filter;
  if (status && (/^[1-5]xx$/.test(status) ? `${Math.floor(log.status / 100)}xx` !== status : String(log.status) !== status)) return false;
  if (method && log.method !== method) return false;
  if (path && log.path.replace(/\/$/, "") !== path.replace(/\/$/, "")) return false;
  if (error_code && log.error_code !== error_code) return false;
  if (api_key && log.api_key !== api_key) return false;
  return !idempotency_key || log.idempotency_key === idempotency_key;
}

/** Where a followed stream is (`stream-hub.ts`); the query is polled slowly whenever it is not open. */
export type FollowState = StreamState;

export type LiveQueryOptions<T, K extends QueryKey> = Omit<UseQueryOptions<T, Error, T, K>, "refetchInterval"> & {
  /** Whether the feed is followed now, given what was read last (a finished job stops); true when absent. */
  readonly live?: boolean | ((data: T | undefined) => boolean);
  /** The stream that refreshes the query; without one the feed is polled. */
  // biome-ignore lint/suspicious/noExplicitAny: each page's stream brings its own item type
  readonly follow?: Follow<any>;
};

/** A query that follows `feed` while `live` says so: the one hook every live part of a page uses. */
export function useLiveQuery<T, K extends QueryKey = QueryKey>(
  feed: Feed,
  { live = true, follow, ...options }: LiveQueryOptions<T, K>,
): UseQueryResult<T, Error> {
  const queryClient = useQueryClient();
  const on = (data: T | undefined) => (typeof live === "function" ? live(data) : live) && options.enabled !== false;
  const state = useFollow(follow && on(queryClient.getQueryData<T>(options.queryKey)) ? follow : undefined, options.queryKey);
  return useQuery<T, Error, T, K>({
    ...options,
    refetchInterval: (query) => {
      if (!on(query.state.data)) return false;
      if (follow) return state === "open" ? false : FALLBACK_INTERVAL_MS;
      return feed in FEED_INTERVAL_MS ? FEED_INTERVAL_MS[feed as PolledFeed] : FALLBACK_INTERVAL_MS;
    },
  });
}

/**
 * Follows `follow`'s shared stream while it is given, refetching `queryKey` when an item it accepts comes (one read at
 * a time: items that come during a read cause one more read after it) and when the stream opens (what was made
 * before). Following stops when the component unmounts or `follow.key` changes.
 */
export function useFollow<Item>(follow: Follow<Item> | undefined, queryKey: QueryKey): FollowState {
  const queryClient = useQueryClient();
  const [state, setState] = useState<FollowState>("off");
  const latest = useRef({ follow, queryKey });
  latest.current = { follow, queryKey };
  const followKey = follow ? `${follow.key} ${hashKey(queryKey)}` : null;

  useEffect(() => {
    const current = latest.current.follow;
    if (followKey === null || !current) {
      setState("off");
      return;
    }
    let closed = false;
    const refresh = oneReadAtATime(
      () => queryClient.refetchQueries({ queryKey: latest.current.queryKey, exact: true }, { cancelRefetch: false }),
      () => closed,
    );
    const unsubscribe = current.stream.subscribe({
      item: (item) => {
        if (latest.current.follow?.accept?.(item) ?? true) void refresh();
      },
      opened: () => void refresh(),
      state: (next) => {
        if (!closed) setState(next);
      },
    });
    return () => {
      closed = true;
      unsubscribe();
    };
  }, [followKey, queryClient]);

  return state;
}

/**
 * A trigger of `read` that runs one read at a time: a trigger during a read asks for one more read after it (however
 * many came), since the read in flight may have been answered before what triggered it was made. `stopped` ends it.
 */
export function oneReadAtATime(read: () => Promise<unknown>, stopped: () => boolean = () => false): () => Promise<void> {
  let reading = false;
  let again = false;
  return async () => {
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      do {
        again = false;
        await read();
      } while (again && !stopped());
    } finally {
      reading = false;
    }
  };
}

/** Several queries of one feed (an endpoint's statistics per row of a table): the list form of useLiveQuery. */
export function useLiveQueries<T>(
  feed: PolledFeed,
  queries: readonly Omit<UseQueryOptions<T, Error, T, QueryKey>, "refetchInterval">[],
): UseQueryResult<T, Error>[] {
  return useQueries({ queries: queries.map((query) => ({ ...query, refetchInterval: FEED_INTERVAL_MS[feed] })) }) as UseQueryResult<T, Error>[];
}
