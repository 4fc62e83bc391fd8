import type { Schemas } from "@rms/sdk";
import { useQueries, useQuery } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import { ApiFailure, unwrap } from "../api/client";
import { useAuth } from "../app/auth";
import { PageHeader } from "../components/Disclosure";
import { EndpointHealthTable } from "../components/EndpointHealth";
import { ErrorNotice, NotAvailable } from "../components/ErrorNotice";
import { IdLink } from "../components/IdLink";
import { Loading, Section, StatusBadge, StatusCode, Time } from "../components/ui";
import { followEvents, followRequestLogs, useLiveQuery } from "../lib/live";
import { isScopeProbe } from "../lib/scopes";
import { relativeTime } from "../lib/time";
import { usePageTitle } from "../lib/title";

/** How many a bounded page holds: "n", or "100+" when there are more (the dashboard never counts a whole account). */
export function countLabel(page: { data: unknown[]; has_more: boolean } | undefined): string {
  if (!page) return "…";
  return page.has_more ? `${page.data.length}+` : String(page.data.length);
}

/** What went wrong first: the endpoints' delivery health, the events still waiting, the failed requests; then the counts. */
export function OverviewPage() {
  const auth = useAuth();
  const { client } = auth;
  usePageTitle("Overview");
  const endpoints = useQuery({
    queryKey: ["webhook-endpoints"],
    enabled: auth.can("webhooks:write"),
    queryFn: () => unwrap(client.webhookEndpoints.list({ limit: 100 })),
  });
  return (
    <div>
      <PageHeader title="Overview" />
      <Section title="Webhook endpoints">
        {!auth.can("webhooks:write") && (
          <p className="scope-note">This key does not have the webhooks:write scope: endpoints and their deliveries are not shown.</p>
        )}
        {endpoints.isPending && auth.can("webhooks:write") && <Loading what="endpoints" />}
        <ErrorNotice error={endpoints.error} />
        {endpoints.data && endpoints.data.data.length === 0 && (
          <p className="empty">
            No webhook endpoints. <Link to="/webhooks">Add one</Link>.
          </p>
        )}
        {endpoints.data && endpoints.data.data.length > 0 && (
          <EndpointHealthTable endpoints={endpoints.data.data} caption="Webhook endpoints by delivery health, failing first" />
        )}
      </Section>
      {auth.can("events:read") && auth.can("webhooks:write") && <Undelivered />}
      <FailedRequests />
      <Counts />
    </div>
  );
}

type Delivery = Schemas["WebhookDelivery"];

/** The latest events some endpoint has not answered 2xx yet, and which endpoints, with what comes next for each. */
function Undelivered() {
  const { client } = useAuth();
  // A new event may be one not delivered yet: the list follows the account's events.
  const undelivered = useLiveQuery("events", {
    queryKey: ["overview", "undelivered"],
    follow: followEvents(client),
    queryFn: () => unwrap(client.events.list({ limit: 5, delivery_success: false })),
  });
  const events = undelivered.data?.data ?? [];
  const deliveries = useQueries({
    queries: events.map((event) => ({ queryKey: ["event-deliveries", event.id], queryFn: () => unwrap(client.events.listDeliveries(event.id)) })),
  });
  return (
    <Section title="Events not yet delivered everywhere">
      <ErrorNotice error={undelivered.error} />
      {undelivered.data && events.length === 0 && <p className="empty">Every event was delivered to every endpoint it was sent to.</p>}
      <ul className="plain-list">
        {events.map((event, i) => {
          const waiting = (deliveries[i]?.data?.data ?? []).filter((d) => d.status === "pending" || d.status === "failed");
          return (
            <li key={event.id}>
              <IdLink id={event.id} /> {event.type}, <Time seconds={event.created} />:{" "}
              {waiting.length === 0
                ? `${event.pending_webhooks} endpoint${event.pending_webhooks === 1 ? "" : "s"} pending`
                : waiting.map((d, j) => <Waiting key={d.webhook_endpoint} delivery={d} first={j === 0} />)}
            </li>
          );
        })}
      </ul>
    </Section>
  );
}

function Waiting({ delivery, first }: { delivery: Delivery; first: boolean }) {
  return (
    <span>
      {first ? "" : "; "}
      <IdLink id={delivery.webhook_endpoint} />{" "}
      {delivery.status === "failed" ? (
        <>
          <span className="badge badge-failed">gave up</span> after {delivery.attempts} attempts
        </>
      ) : delivery.next_attempt_at !== null ? (
        <>
          <span className="badge badge-running">retrying</span> next {relativeTime(delivery.next_attempt_at)}
        </>
      ) : (
        <span className="badge badge-running">pending</span>
      )}
    </span>
  );
}

type RequestLog = Schemas["RequestLog"];

/** The latest requests answered 4xx or 5xx, newest first (the list leaves out the dashboard's own, as the API's does by default). */
function FailedRequests() {
  const { client } = useAuth();
  // Follows the API's requests, read again when one fails.
  const failed = useLiveQuery("request-logs", {
    queryKey: ["overview", "failed-requests"],
    follow: followRequestLogs(client, {}, (log) => log.status >= 400),
    queryFn: async () => {
      const [client4xx, server5xx] = await Promise.all((["4xx", "5xx"] as const).map((status) => unwrap(client.requestLogs.list({ limit: 10, status }))));
      return [...client4xx!.data, ...server5xx!.data]
        .filter((log) => !isScopeProbe(log.request_params))
        .sort((a, b) => (a.id < b.id ? 1 : -1))
        .slice(0, 5);
    },
  });
  const missing = failed.error instanceof ApiFailure && failed.error.routeMissing ? failed.error : null;
  return (
    <Section title="Latest failed requests">
      {missing ? (
        <NotAvailable what="Request logs" error={missing} />
      ) : (
        <>
          <ErrorNotice error={failed.error} />
          {failed.data && failed.data.length === 0 && <p className="empty">No failed requests.</p>}
          <ul className="plain-list">
            {failed.data?.map((log: RequestLog) => (
              <li key={log.id}>
                <StatusCode status={log.status} /> {log.method} <span className="url">{log.path}</span> {log.error_code && <code>{log.error_code}</code>},{" "}
                <Time seconds={log.created} /> <IdLink id={log.id} />
              </li>
            ))}
          </ul>
        </>
      )}
    </Section>
  );
}

/** The API's status and version, and how many of each kind (one page of up to 100 each: never a count of the account). */
function Counts() {
  const auth = useAuth();
  const { client } = auth;
  const status = useQuery({ queryKey: ["status"], queryFn: () => unwrap(client.status.retrieve()) });
  const resources = useQuery({
    queryKey: ["overview", "resources"],
    enabled: auth.can("resources:read"),
    queryFn: () => unwrap(client.resources.list({ limit: 100 })),
  });
  const events = useQuery({ queryKey: ["overview", "events"], enabled: auth.can("events:read"), queryFn: () => unwrap(client.events.list({ limit: 100 })) });
  const jobs = useQuery({ queryKey: ["overview", "jobs"], enabled: auth.can("jobs:read"), queryFn: () => unwrap(client.jobs.list({ limit: 100 })) });
  return (
    <Section title="API and counts">
      <ErrorNotice error={status.error} />
      {status.data && (
        <p>
          API status <StatusBadge status={status.data.status} />, version <code>{status.data.version}</code>.
        </p>
      )}
      <ul className="counts" aria-label="Counts, up to 100 each">
        <li>
          <Link to="/resources">Resources</Link>: <strong>{auth.can("resources:read") ? countLabel(resources.data) : "no access"}</strong>
        </li>
        <li>
          <Link to="/events">Events (30 days)</Link>: <strong>{auth.can("events:read") ? countLabel(events.data) : "no access"}</strong>
        </li>
        <li>
          <Link to="/jobs">Jobs</Link>: <strong>{auth.can("jobs:read") ? countLabel(jobs.data) : "no access"}</strong>
        </li>
      </ul>
      <p className="help">Counts stop at 100: the dashboard reads one page of each, never a count of the account.</p>
      <ErrorNotice error={resources.error ?? events.error ?? jobs.error} />
    </Section>
  );
}
