import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { getRouteApi, Link, useNavigate } from "@tanstack/react-router";
import { ApiFailure, type Schemas, unwrap } from "../api/client";
import { useAuth } from "../app/auth";
import { ErrorNotice, NotAvailable } from "../components/ErrorNotice";
import { IdLink, idsInPath } from "../components/IdLink";
import type { Column } from "../components/DataTable";
import { cursorPager, type FilterSpec, ListPage } from "../components/ListPage";
import { Json, Loading, Section, StatusBadge, Time } from "../components/ui";

export type RequestLog = Schemas["RequestLog"];

const FILTERS = ["status", "method", "path", "error_code", "api_key", "idempotency_key"] as const;

const LOG_FILTERS: FilterSpec = {
  apply: "submit",
  idPrefix: "rl",
  section: "Filter",
  formLabel: "Filter request logs",
  fields: [
    { name: "status", label: "Status (e.g. 404 or 4xx)" },
    { name: "method", label: "Method" },
    { name: "path", label: "Path" },
    { name: "error_code", label: "Error code" },
    { name: "api_key", label: "API key id" },
    { name: "idempotency_key", label: "Idempotency key" },
  ],
};

const LOG_COLUMNS: readonly Column<RequestLog>[] = [
  { header: "Request", cell: (log) => <IdLink id={log.id} /> },
  { header: "Method", cell: (log) => log.method },
  { header: "Path", cell: (log) => log.path, className: "text" },
  { header: "Status", cell: (log) => <StatusBadge status={String(log.status)} /> },
  { header: "Error", cell: (log) => log.error_code ?? "—" },
  { header: "When", cell: (log) => <Time seconds={log.created} />, className: "when" },
];

const route = getRouteApi("/request-logs");

export function RequestLogsPage() {
  const search = route.useSearch();
  const navigate = useNavigate({ from: "/request-logs" });
  const auth = useAuth();
  const filters = Object.fromEntries(FILTERS.filter((name) => search[name]).map((name) => [name, search[name]!]));
  const logs = useQuery({
    queryKey: ["request-logs", search],
    placeholderData: keepPreviousData,
    queryFn: () =>
      unwrap(auth.client.requestLogs.list({ limit: 20, ...(filters as { method?: "GET" | "POST" | "DELETE" }), ...(search.after ? { starting_after: search.after } : {}) })),
  });
  const missing = logs.error instanceof ApiFailure && logs.error.routeMissing ? logs.error : null;
  return (
    <ListPage
      title="Request logs"
      unavailable={missing && <NotAvailable what="Request logs" error={missing} />}
      filters={LOG_FILTERS}
      values={filters}
      onFilter={(values) => void navigate({ search: values })}
      list={{
        title: "Requests, newest first",
        caption: "Request logs",
        what: "request logs",
        query: logs,
        columns: LOG_COLUMNS,
        empty: "No requests match.",
        pager: (page) => cursorPager(search, page, (cursor) => void navigate({ search: { ...filters, ...cursor } }), false),
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
  return (
    <div>
      <p className="crumbs">
        <Link to="/request-logs">Request logs</Link> / <code>{id}</code>
      </p>
      <h1>{data ? `${data.method} ${data.path}` : "Request"}</h1>
      {missing ? <NotAvailable what="Request logs" error={missing} /> : <ErrorNotice error={log.error} />}
      {log.isPending && <Loading what="the request" />}
      {data && (
        <>
          <Section title="Details">
            <dl className="details">
              <dt>Status</dt>
              <dd>
                <StatusBadge status={String(data.status)} /> {data.error_code && <code>{data.error_code}</code>}
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
              <dt>Idempotency key</dt>
              <dd>
                {data.idempotency_key ?? "—"}
                {data.idempotent_replayed ? " (replayed)" : ""}
              </dd>
            </dl>
          </Section>
          <Section title="Parameters">
            <Json value={data.request_params} label="The request's parameters" />
          </Section>
          <Section title="Answer">
            <Json value={data.response_body} label="The answer's body" />
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
