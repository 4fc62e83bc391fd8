import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { getRouteApi, Link, useNavigate } from "@tanstack/react-router";
import { useState } from "react";
import { ApiFailure, type Schemas, unwrap } from "../api/client";
import { useAuth } from "../app/auth";
import { ErrorNotice, NotAvailable } from "../components/ErrorNotice";
import { IdLink, idsInPath } from "../components/IdLink";
import { Json, Loading, Section, StatusBadge } from "../components/ui";
import { formatTime } from "../lib/time";

export type RequestLog = Schemas["RequestLog"];

const FILTERS = ["status", "method", "path", "error_code", "api_key", "idempotency_key"] as const;
type FilterName = (typeof FILTERS)[number];
const LABELS: Record<FilterName, string> = {
  status: "Status (e.g. 404 or 4xx)",
  method: "Method",
  path: "Path",
  error_code: "Error code",
  api_key: "API key id",
  idempotency_key: "Idempotency key",
};

const route = getRouteApi("/request-logs");

export function RequestLogsPage() {
  const search = route.useSearch();
  const navigate = useNavigate({ from: "/request-logs" });
  const auth = useAuth();
  const [draft, setDraft] = useState<Partial<Record<FilterName, string>>>(() => Object.fromEntries(FILTERS.map((f) => [f, search[f] ?? ""])));
  const logs = useQuery({
    queryKey: ["request-logs", search],
    placeholderData: keepPreviousData,
    queryFn: () => {
      const filters = Object.fromEntries(FILTERS.filter((name) => search[name]).map((name) => [name, search[name]!])) as { method?: "GET" | "POST" | "DELETE" } & Record<
        string,
        string
      >;
      return unwrap(auth.client.GET("/v1/request_logs", { params: { query: { limit: 20, ...filters, ...(search.after ? { starting_after: search.after } : {}) } } }));
    },
  });
  const missing = logs.error instanceof ApiFailure && logs.error.routeMissing ? logs.error : null;
  const rows = logs.data?.data ?? [];
  const filters = Object.fromEntries(FILTERS.filter((f) => search[f]).map((f) => [f, search[f]]));
  return (
    <div>
      <h1>Request logs</h1>
      {missing ? (
        <NotAvailable what="Request logs" error={missing} />
      ) : (
        <>
          <Section title="Filter">
            <form
              className="form form-inline"
              aria-label="Filter request logs"
              onSubmit={(e) => {
                e.preventDefault();
                void navigate({ search: Object.fromEntries(Object.entries(draft).filter(([, v]) => v && v.trim() !== "")) });
              }}
            >
              {FILTERS.map((name) => (
                <div className="field" key={name}>
                  <label htmlFor={`rl-${name}`}>{LABELS[name]}</label>
                  <input id={`rl-${name}`} value={draft[name] ?? ""} onChange={(e) => setDraft((d) => ({ ...d, [name]: e.target.value }))} />
                </div>
              ))}
              <div className="actions">
                <button type="submit">Apply</button>
              </div>
            </form>
          </Section>
          <Section title="Requests, newest first">
            {logs.isPending && <Loading what="request logs" />}
            <ErrorNotice error={logs.error} />
            {logs.data && (
              <table className="table">
                <caption className="sr-only">Request logs</caption>
                <thead>
                  <tr>
                    <th scope="col">Request</th>
                    <th scope="col">Method</th>
                    <th scope="col">Path</th>
                    <th scope="col">Status</th>
                    <th scope="col">Error</th>
                    <th scope="col">When</th>
                  </tr>
                </thead>
                <tbody>
                  {rows.map((log) => (
                    <tr key={log.id}>
                      <td>
                        <IdLink id={log.id} />
                      </td>
                      <td>{log.method}</td>
                      <td className="url">{log.path}</td>
                      <td>
                        <StatusBadge status={String(log.status)} />
                      </td>
                      <td>{log.error_code ?? "—"}</td>
                      <td className="when">{formatTime(log.created)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            {logs.data && rows.length === 0 && <p className="empty">No requests match.</p>}
            {logs.data && (
              <nav className="pager" aria-label="Pages">
                <button type="button" disabled={!search.after} onClick={() => void navigate({ search: filters })}>
                  First page
                </button>
                <button type="button" disabled={!logs.data.has_more || !rows.at(-1)} onClick={() => void navigate({ search: { ...filters, after: rows.at(-1)!.id } })}>
                  Older
                </button>
              </nav>
            )}
          </Section>
        </>
      )}
    </div>
  );
}

const logRoute = getRouteApi("/request-logs/$id");

export function RequestLogDetailPage() {
  const { id } = logRoute.useParams();
  const auth = useAuth();
  const log = useQuery({ queryKey: ["request-log", id], queryFn: () => unwrap(auth.client.GET("/v1/request_logs/{id}", { params: { path: { id } } })) });
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
                {formatTime(data.created)}, {data.duration_ms} ms
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
