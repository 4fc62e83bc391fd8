import { useQuery } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import { ApiFailure, unwrap } from "../api/client";
import { useAuth } from "../app/auth";
import { ErrorNotice, NotAvailable } from "../components/ErrorNotice";
import { IdLink } from "../components/IdLink";
import { Loading, Section, StatusBadge, Time } from "../components/ui";
import { isScopeProbe } from "../lib/scopes";

/** How many a bounded page holds: "n", or "100+" when there are more (the dashboard never counts a whole account). */
export function countLabel(page: { data: unknown[]; has_more: boolean } | undefined): string {
  if (!page) return "…";
  return page.has_more ? `${page.data.length}+` : String(page.data.length);
}

export function OverviewPage() {
  const auth = useAuth();
  const { client } = auth;
  const status = useQuery({ queryKey: ["status"], queryFn: () => unwrap(client.status.retrieve()) });
  const resources = useQuery({
    queryKey: ["overview", "resources"],
    enabled: auth.can("resources:read"),
    queryFn: () => unwrap(client.resources.list({ limit: 100 })),
  });
  const events = useQuery({
    queryKey: ["overview", "events"],
    enabled: auth.can("events:read"),
    queryFn: () => unwrap(client.events.list({ limit: 100 })),
  });
  const undelivered = useQuery({
    queryKey: ["overview", "undelivered"],
    enabled: auth.can("events:read"),
    queryFn: () => unwrap(client.events.list({ limit: 10, delivery_success: false })),
  });
  const jobs = useQuery({ queryKey: ["overview", "jobs"], enabled: auth.can("jobs:read"), queryFn: () => unwrap(client.jobs.list({ limit: 100 })) });
  const endpoints = useQuery({
    queryKey: ["webhook-endpoints"],
    enabled: auth.can("webhooks:write"),
    queryFn: () => unwrap(client.webhookEndpoints.list({ limit: 100 })),
  });
  const failed = useQuery({
    queryKey: ["overview", "failed-requests"],
    queryFn: () => unwrap(client.requestLogs.list({ limit: 10, status: "4xx" })),
    // The dashboard's own scope probes (lib/scopes.ts) are not failures anyone needs to see here.
    select: (page) => ({ ...page, data: page.data.filter((log) => !isScopeProbe(log.request_params)).slice(0, 5) }),
  });
  const failing = endpoints.data?.data.filter((e) => e.status === "disabled") ?? [];
  const logsMissing = failed.error instanceof ApiFailure && failed.error.routeMissing ? failed.error : null;
  return (
    <div>
      <h1>Overview</h1>
      <Section title="API">
        {status.isPending && <Loading what="the API status" />}
        <ErrorNotice error={status.error} />
        {status.data && (
          <p>
            Status <StatusBadge status={status.data.status} />, version <code>{status.data.version}</code>.
          </p>
        )}
      </Section>
      <Section title="Counts (up to 100 each; the dashboard never counts a whole account)">
        <ul className="counts">
          <li>
            <Link to="/resources">Resources</Link>: <strong>{auth.can("resources:read") ? countLabel(resources.data) : "no access"}</strong>
          </li>
          <li>
            <Link to="/events">Events (30 days)</Link>: <strong>{auth.can("events:read") ? countLabel(events.data) : "no access"}</strong>
          </li>
          <li>
            <Link to="/jobs">Jobs</Link>: <strong>{auth.can("jobs:read") ? countLabel(jobs.data) : "no access"}</strong>
          </li>
          <li>
            <Link to="/webhooks">Webhook endpoints</Link>: <strong>{auth.can("webhooks:write") ? countLabel(endpoints.data) : "no access"}</strong>
          </li>
        </ul>
        <ErrorNotice error={resources.error ?? events.error ?? jobs.error ?? endpoints.error} />
      </Section>
      <Section title="Failing webhook endpoints">
        {!auth.can("webhooks:write") && <p className="scope-note">This key does not have the webhooks:write scope.</p>}
        {endpoints.data && failing.length === 0 && <p className="empty">None disabled.</p>}
        <ul>
          {failing.map((e) => (
            <li key={e.id}>
              <IdLink id={e.id} /> {e.url} <StatusBadge status={e.status} />
            </li>
          ))}
        </ul>
        {undelivered.data && undelivered.data.data.length > 0 && (
          <>
            <h3>Latest events not yet delivered everywhere</h3>
            <ul>
              {undelivered.data.data.map((e) => (
                <li key={e.id}>
                  <IdLink id={e.id} /> {e.type}, {e.pending_webhooks} endpoint(s) pending, <Time seconds={e.created} />
                </li>
              ))}
            </ul>
          </>
        )}
      </Section>
      <Section title="Latest failed requests">
        {logsMissing ? (
          <NotAvailable what="Request logs" error={logsMissing} />
        ) : (
          <>
            <ErrorNotice error={failed.error} />
            {failed.data && failed.data.data.length === 0 && <p className="empty">No failed requests.</p>}
            <ul>
              {failed.data?.data.map((log) => (
                <li key={log.id}>
                  <IdLink id={log.id} /> {log.method} {log.path}: {log.status} {log.error_code ?? ""}
                </li>
              ))}
            </ul>
          </>
        )}
      </Section>
    </div>
  );
}
