import { keepPreviousData } from "@tanstack/react-query";
import { getRouteApi, useNavigate } from "@tanstack/react-router";
import { ApiFailure, type Schemas, unwrap } from "../api/client";
import { useAuth } from "../app/auth";
import { NotAvailable } from "../components/ErrorNotice";
import { IdLink } from "../components/IdLink";
import type { Column } from "../components/DataTable";
import { cursorPager, type FilterSpec, ListPage } from "../components/ListPage";
import { StatusCode, Time } from "../components/ui";
import { dayBound } from "../lib/filters";
import { shortUserAgent } from "../lib/user-agent";
import { followRequestLogs, useLiveQuery } from "../lib/live";

export type RequestLog = Schemas["RequestLog"];

/** The filters the page keeps in its URL (each as the API takes it, but `from`/`to`: UTC days for `created`). */
const FILTERS = ["status", "method", "path", "error_code", "api_key", "idempotency_key", "from", "to", "source"] as const;

/** Whose requests: the API's (the list's default: the dashboard's own polls left out), everything, or the dashboard's. */
export const SOURCE_CHOICES = [
  { value: "all", label: "Everything, the dashboard's own too" },
  { value: "dashboard", label: "The dashboard's own only" },
] as const;

/** Statuses offered: the classes, then the codes people look for. */
export const STATUS_CHOICES = ["2xx", "4xx", "5xx", "400", "401", "403", "404", "409", "429", "500", "503"] as const;
export const METHOD_CHOICES = ["GET", "POST", "DELETE"] as const;

const LOG_FILTERS: FilterSpec = {
  apply: "submit",
  idPrefix: "rl",
  section: "Filter",
  formLabel: "Filter request logs",
  clearable: true,
  fields: [
    { name: "status", label: "Status", kind: "select", options: STATUS_CHOICES },
    { name: "method", label: "Method", kind: "select", options: METHOD_CHOICES },
    { name: "path", label: "Path", placeholder: "/v1/resources" },
    { name: "error_code", label: "Error code", placeholder: "resource_missing" },
    { name: "api_key", label: "API key id", placeholder: "key_..." },
    { name: "idempotency_key", label: "Idempotency key" },
    { name: "from", label: "From (UTC day)", kind: "date" },
    { name: "to", label: "To (UTC day)", kind: "date" },
    { name: "source", label: "Requests made by", kind: "select", anyLabel: "API keys (not this dashboard)", options: SOURCE_CHOICES },
  ],
};

const LOG_COLUMNS: readonly Column<RequestLog>[] = [
  { header: "When", cell: (log) => <Time seconds={log.created} />, className: "when" },
  { header: "Status", cell: (log) => <StatusCode status={log.status} /> },
  { header: "Method", cell: (log) => <code>{log.method}</code> },
  { header: "Path", cell: (log) => log.path, className: "text" },
  { header: "Error", cell: (log) => (log.error_code ? <code>{log.error_code}</code> : "—") },
  { header: "IP", cell: (log) => <code>{log.client_ip}</code> },
  {
    header: "User agent",
    cell: (log) => (
      <span className="ua" title={log.user_agent ?? undefined}>
        {shortUserAgent(log.user_agent)}
      </span>
    ),
  },
  { header: "Request", cell: (log) => <IdLink id={log.id} /> },
];

/** Where a request came from, shown when the list holds more than the API's. */
const SOURCE_COLUMN: Column<RequestLog> = { header: "Source", cell: (log) => (log.source === "dashboard" ? <span className="badge">dashboard</span> : "api") };

const route = getRouteApi("/request-logs");

/** The request logs: filters as choices, coloured statuses, who asked (IP, user agent), and a live tail of the newest. */
export function RequestLogsPage() {
  const search = route.useSearch();
  const navigate = useNavigate({ from: "/request-logs" });
  const auth = useAuth();
  const values = Object.fromEntries(FILTERS.filter((name) => search[name]).map((name) => [name, search[name]!]));
  const { from, to, ...exact } = values;
  const created = { ...(from ? { gte: dayBound(from, false) } : {}), ...(to ? { lte: dayBound(to, true) } : {}) };
  const cursor = search.after ? { starting_after: search.after } : search.before ? { ending_before: search.before } : {};
  const first = !search.after && !search.before;
  const live = first && search.live === "1";
  const logs = useLiveQuery("request-logs", {
    queryKey: ["request-logs", values, cursor],
    placeholderData: keepPreviousData,
    live,
    follow: followRequestLogs(auth.client, exact),
    queryFn: () =>
      unwrap(
        auth.client.requestLogs.list({
          limit: 20,
          ...(exact as { method?: "GET" | "POST" | "DELETE"; source?: "api" | "dashboard" | "all" }),
          ...(from || to ? { created } : {}),
          ...cursor,
        }),
      ),
  });
  const missing = logs.error instanceof ApiFailure && logs.error.routeMissing ? logs.error : null;
  const keep = { ...values, ...(search.live ? { live: search.live } : {}) };
  return (
    <ListPage
      title="Request logs"
      unavailable={missing && <NotAvailable what="Request logs" error={missing} />}
      filters={LOG_FILTERS}
      values={values}
      onFilter={(next) => void navigate({ search: { ...next, ...(search.live ? { live: search.live } : {}) } })}
      list={{
        title:
          values.source === "all"
            ? "Requests, newest first (the dashboard's own too)"
            : values.source === "dashboard"
              ? "The dashboard's own requests, newest first"
              : "Requests, newest first",
        caption: "Request logs",
        what: "request logs",
        query: logs,
        columns: values.source ? [...LOG_COLUMNS, SOURCE_COLUMN] : LOG_COLUMNS,
        empty: "No requests match.",
        rowClass: (log) => (log.status >= 500 ? "row-failing" : undefined),
        actions: (
          <button
            type="button"
            className="secondary small"
            aria-pressed={live}
            disabled={!first}
            title={first ? undefined : "The live tail follows the first page"}
            onClick={() => void navigate({ search: { ...values, ...(live ? {} : { live: "1" }) } })}
          >
            {live ? "Live: on" : "Live: off"}
          </button>
        ),
        pager: (page) => cursorPager(search, page, (c) => void navigate({ search: { ...keep, ...c } }), true),
      }}
    />
  );
}
