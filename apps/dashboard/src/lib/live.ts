import { type QueryKey, type UseQueryOptions, type UseQueryResult, useQueries, useQuery } from "@tanstack/react-query";

/**
 * The dashboard's live parts, in one place (docs/dashboard.md, "Live updates"): what each follows and how often.
 * Today each is a query asked again while the tab is visible (TanStack Query's `refetchInterval`, which pauses in a
 * hidden tab); when the API's streams serve a feed (`events.stream()`, `requestLogs.stream()`), this module is where
 * a feed moves to one, keeping the same hook and the pages untouched.
 */
export type Feed =
  /** One running job's progress. */
  | "job"
  /** The jobs list (a job started elsewhere appears). */
  | "jobs"
  /** An endpoint's attempts, and an event's deliveries and attempts. */
  | "attempts"
  /** Endpoints' delivery statistics (the overview, the webhooks pages). */
  | "endpoint-health"
  /** The request logs' tail. */
  | "request-logs"
  /** A resource's events. */
  | "events";

/** How often each feed is asked again while the tab is visible (at most once a second: CONTRACT.md section 13). */
export const FEED_INTERVAL_MS: Readonly<Record<Feed, number>> = {
  job: 1_000,
  jobs: 2_000,
  attempts: 1_000,
  "endpoint-health": 30_000,
  "request-logs": 2_000,
  events: 2_000,
};

export type LiveQueryOptions<T, K extends QueryKey> = Omit<UseQueryOptions<T, Error, T, K>, "refetchInterval"> & {
  /** Whether the feed is followed now, given what was read last (a finished job stops); true when absent. */
  readonly live?: boolean | ((data: T | undefined) => boolean);
};

/** A query that follows `feed` while `live` says so: the one hook every live part of a page uses. */
export function useLiveQuery<T, K extends QueryKey = QueryKey>(feed: Feed, { live = true, ...options }: LiveQueryOptions<T, K>): UseQueryResult<T, Error> {
  return useQuery<T, Error, T, K>({
    ...options,
    refetchInterval: (query) => {
      const on = typeof live === "function" ? live(query.state.data) : live;
      return on ? FEED_INTERVAL_MS[feed] : false;
    },
  });
}

/** Several queries of one feed (an endpoint's statistics per row of a table): the list form of useLiveQuery. */
export function useLiveQueries<T>(feed: Feed, queries: readonly Omit<UseQueryOptions<T, Error, T, QueryKey>, "refetchInterval">[]): UseQueryResult<T, Error>[] {
  return useQueries({ queries: queries.map((query) => ({ ...query, refetchInterval: FEED_INTERVAL_MS[feed] })) }) as UseQueryResult<T, Error>[];
}
