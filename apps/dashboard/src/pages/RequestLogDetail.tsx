import { useQuery } from "@tanstack/react-query";
import { getRouteApi, Link } from "@tanstack/react-router";
import { API_ORIGIN, ApiFailure, unwrap } from "../api/client";
import { useAuth } from "../app/auth";
import { CopyButton } from "../components/CopyButton";
import { PageHeader } from "../components/Disclosure";
import { ErrorNotice, NotAvailable } from "../components/ErrorNotice";
import { IdLink, idsInPath } from "../components/IdLink";
import { JsonView } from "../components/JsonView";
import { Loading, Section, StatusCode, Time } from "../components/ui";
import { curlOf } from "../lib/curl";
import { objectPage } from "../lib/jump";
import { usePageTitle } from "../lib/title";

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
  return out.filter((id) => objectPage(id) !== null);
}
