import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { API_ORIGIN } from "../api/client";
import { getRouteApi, Link, useNavigate } from "@tanstack/react-router";
import { ApiFailure, type Schemas, unwrap } from "../api/client";
import { useAuth } from "../app/auth";
import { ErrorNotice, NotAvailable } from "../components/ErrorNotice";
import { IdLink, idsInPath } from "../components/IdLink";
import type { Column } from "../components/DataTable";
import { cursorPager, type FilterSpec, ListPage } from "../components/ListPage";
import { CopyButton } from "../components/CopyButton";
import { PageHeader } from "../components/Disclosure";
import { JsonView } from "../components/JsonView";
import { Loading, Section, StatusCode, Time } from "../components/ui";
import { curlOf } from "../lib/curl";
import { dayBound } from "../lib/filters";
import { shortUserAgent } from "../lib/user-agent";
import { useLiveQuery } from "../lib/live";
import { usePageTitle } from "../lib/title";

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

const logRoute = getRouteApi("/request-logs/$id");

export function RequestLogDetailPage() {
  const { id } = logRoute.useParams();
  const auth = useAuth();
  const log = useQuery({ queryKey: ["request-log", id], queryFn: () => unwrap(auth.client.requestLogs.retrieve(id)) });
  const missing = log.error instanceof ApiFailure && log.error.routeMissing ? log.error : null;
  const data = log.data;
  const touched = data ? [...new Set([...idsInPath(data.path), ...idsIn(data.response_body)])] : [];
  usePageTitle(id, "Request");
  return (
    <div>
      <PageHeader
        title={data ? `${data.method} ${data.path}` : "Request"}
        crumbs={
          <>
            <Link to="/request-logs">Request logs</Link> / <code>{id}</code>
          </>
        }
      >
        {data && <CopyButton value={curlOf(data, API_ORIGIN)} label="Copy as curl" name="Copy as curl (the key masked)" />}
      </PageHeader>
      {missing ? <NotAvailable what="Request logs" error={missing} /> : <ErrorNotice error={log.error} />}
      {log.isPending && <Loading what="the request" />}
      {data && (
        <>
          <Section title="Details">
            <dl className="details">
              <dt>Status</dt>
              <dd>
                <StatusCode status={data.status} /> {data.error_code && <code>{data.error_code}</code>}
              </dd>
              <dt>Key</dt>
              <dd>
                <Link to="/request-logs" search={{ api_key: data.api_key }}>
                  {data.api_key}
                </Link>{" "}
                ({data.key_kind})
              </dd>
              <dt>Objects</dt>
              <dd>{touched.length === 0 ? "—" : touched.map((t) => <IdLink key={t} id={t} />)}</dd>
              <dt>When</dt>
              <dd>
                <Time seconds={data.created} />, {data.duration_ms} ms
              </dd>
              <dt>Source</dt>
              <dd>{data.source === "dashboard" ? "this dashboard (a dashboard session's key)" : "an API key"}</dd>
              <dt>Client</dt>
              <dd>
                <code>{data.client_ip}</code> {data.user_agent ?? "no user agent"}
              </dd>
              <dt>Idempotency key</dt>
              <dd>
                {data.idempotency_key ?? "—"}
                {data.idempotent_replayed ? " (replayed)" : ""}
              </dd>
            </dl>
          </Section>
          <Section title="Parameters">
            <JsonView value={data.request_params} label="The request's parameters" />
          </Section>
          <Section title="Answer">
            <JsonView value={data.response_body} label="The answer's body" />
          </Section>
        </>
      )}
    </div>
  );
}

/** Object ids in an answer's top level (`id`) and its list items, to link the objects a request touched. */
function idsIn(body: unknown): string[] {
  const out: string[] = [];
  const visit = (value: unknown) => {
    if (value && typeof value === "object" && "id" in value && typeof (value as { id: unknown }).id === "string") out.push((value as { id: string }).id);
  };
  visit(body);
  const data = (body as { data?: unknown } | null)?.data;
  if (Array.isArray(data)) data.slice(0, 20).forEach(visit);
  return out.filter((id) => /^(res|evt|we|job|file)_/.test(id));
}
