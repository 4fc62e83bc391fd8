import type { EventStreamParams, LiveStream, RequestLogStreamParams, Schemas, StreamOptions, WebhookEvent } from "@rms/sdk";
import { hashKey, type QueryKey, type UseQueryOptions, type UseQueryResult, useQueries, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import type { Client } from "../api/client";

/**
 * The dashboard's live parts, in one place (docs/dashboard.md, "Live updates"): what each follows and how. A feed
 * the API streams (events, request logs) is read again when its stream brings an item, and polled slowly only while
 * its stream cannot open; the others (a job's progress, attempts, delivery statistics) have no stream and are asked
 * again while the tab is visible (TanStack Query's `refetchInterval`, which pauses in a hidden tab).
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

/** How often a streamed feed is asked again while its stream cannot open (a server without streams, a key at its limit of streams). */
export const FALLBACK_INTERVAL_MS = 15_000;

/** A stream whose items say that a query's answer changed. */
export interface Follow<Item> {
  /** What the stream follows (its filters, as text): another value closes it and opens a new one. */
  readonly key: string;
  /** Opens it: the SDK's `events.stream()` or `requestLogs.stream()`, with these options. */
  readonly open: (options: StreamOptions) => LiveStream<Item>;
  /** Whether an item changes what the query shows; every item does when absent. */
  readonly accept?: (item: Item) => boolean;
}

/** The account's events that match `params` (`types`, exact or `prefix.*`; one `object`). */
export function followEvents(client: Client, params: EventStreamParams = {}): Follow<WebhookEvent> {
  return { key: `events ${JSON.stringify(params)}`, open: (options) => client.events.stream(params, options) };
}

/**
 * The account's request logs that match `params` (the list's filters and `source`). The dashboard's own requests
 * never refresh a list: each refresh is one of them, and would bring the next.
 */
export function followRequestLogs(client: Client, params: RequestLogStreamParams = {}, accept?: (log: Schemas["RequestLog"]) => boolean): Follow<Schemas["RequestLog"]> {
  return {
    key: `request-logs ${JSON.stringify(params)}`,
    open: (options) => client.requestLogs.stream(params, options),
    accept: (log) => log.source !== "dashboard" && (accept?.(log) ?? true),
  };
}

/** Where a followed stream is: not followed, opening, open (items refresh the query), or failed to open (polled slowly). */
export type FollowState = "off" | "opening" | "open" | "failed";

export type LiveQueryOptions<T, K extends QueryKey> = Omit<UseQueryOptions<T, Error, T, K>, "refetchInterval"> & {
  /** Whether the feed is followed now, given what was read last (a finished job stops); true when absent. */
  readonly live?: boolean | ((data: T | undefined) => boolean);
  /** The stream that refreshes the query; without one the feed is polled. */
  // biome-ignore lint/suspicious/noExplicitAny: each page's stream brings its own item type
  readonly follow?: Follow<any>;
};

/** A query that follows `feed` while `live` says so: the one hook every live part of a page uses. */
export function useLiveQuery<T, K extends QueryKey = QueryKey>(feed: Feed, { live = true, follow, ...options }: LiveQueryOptions<T, K>): UseQueryResult<T, Error> {
  const queryClient = useQueryClient();
  const on = (data: T | undefined) => (typeof live === "function" ? live(data) : live) && options.enabled !== false;
  const state = useFollow(follow && on(queryClient.getQueryData<T>(options.queryKey)) ? follow : undefined, options.queryKey);
  return useQuery<T, Error, T, K>({
    ...options,
    refetchInterval: (query) => {
      if (!on(query.state.data)) return false;
      if (follow) return state === "failed" ? FALLBACK_INTERVAL_MS : false;
      return feed in FEED_INTERVAL_MS ? FEED_INTERVAL_MS[feed as PolledFeed] : FALLBACK_INTERVAL_MS;
    },
  });
}

/**
 * Follows `follow`'s stream while it is given, refetching `queryKey` when an item comes (one read at a time: items that
 * come during a read cause one more read after it), and once when the stream opens (what was made before it opened).
 * The stream closes when the component unmounts or `follow.key` changes.
 */
export function useFollow<Item>(follow: Follow<Item> | undefined, queryKey: QueryKey): FollowState {
  const queryClient = useQueryClient();
  const [state, setState] = useState<FollowState>("off");
  const latest = useRef({ follow, queryKey });
  latest.current = { follow, queryKey };
  const streamKey = follow ? `${follow.key} ${hashKey(queryKey)}` : null;

  useEffect(() => {
    const current = latest.current.follow;
    if (streamKey === null || !current) {
      setState("off");
      return;
    }
    let closed = false;
    const refresh = oneReadAtATime(
      () => queryClient.refetchQueries({ queryKey: latest.current.queryKey, exact: true }, { cancelRefetch: false }),
      () => closed,
    );
    setState("opening");
    const stream = current.open({
      onOpen: () => {
        if (closed) return;
        setState("open");
        void refresh();
      },
    });
    void (async () => {
      try {
        for await (const item of stream) if (latest.current.follow?.accept?.(item) ?? true) void refresh();
      } catch {
        // The stream could not open (or the API refused it: a revoked key, a filter it rejects); the slow poll reads
        // the list meanwhile, and its answer shows what went wrong (a 401 signs the tab out).
        if (!closed) setState("failed");
      }
    })();
    return () => {
      closed = true;
      stream.close();
    };
  }, [streamKey, queryClient]);

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
export function useLiveQueries<T>(feed: PolledFeed, queries: readonly Omit<UseQueryOptions<T, Error, T, QueryKey>, "refetchInterval">[]): UseQueryResult<T, Error>[] {
  return useQueries({ queries: queries.map((query) => ({ ...query, refetchInterval: FEED_INTERVAL_MS[feed] })) }) as UseQueryResult<T, Error>[];
}
