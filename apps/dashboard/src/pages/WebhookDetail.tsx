import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { getRouteApi, Link, useNavigate } from "@tanstack/react-router";
import { useState } from "react";
import { unwrap, type WebhookAttempt, type WebhookEndpoint } from "../api/client";
import { useAuth } from "../app/auth";
import { AttemptsTable } from "../components/Attempts";
import { PageHeader, useDisclosure } from "../components/Disclosure";
import { EndpointHealthSummary } from "../components/EndpointHealth";
import { ErrorNotice } from "../components/ErrorNotice";
import { JsonView } from "../components/JsonView";
import { cursorPager, Pager } from "../components/ListPage";
import { SecretOnce } from "../components/SecretOnce";
import { ActionForm, Button, ConfirmButton, Loading, Options, ScopeNote, Section, StatusBadge, Time, useScopeReason } from "../components/ui";
import { dayBound } from "../lib/filters";
import { useLiveQuery } from "../lib/live";
import { usePageTitle } from "../lib/title";
import { ATTEMPT_STATUSES } from "../vocabulary";

const route = getRouteApi("/webhooks/$id");

/** An endpoint's page: its health and its attempts first (what people open it for), then its settings. */
export function WebhookDetailPage() {
  const { id } = route.useParams();
  const { client } = useAuth();
  const reason = useScopeReason("webhooks:write");
  const endpoint = useQuery({
    queryKey: ["webhook-endpoint", id],
    enabled: reason === null,
    queryFn: () => unwrap(client.webhookEndpoints.retrieve(id)),
  });
  const data = endpoint.data;
  usePageTitle(id, "Webhook endpoint");
  return (
    <div>
      <PageHeader
        title={data ? data.url : "Webhook endpoint"}
        crumbs={
          <>
            <Link to="/webhooks">Webhook endpoints</Link> / <code>{id}</code> {data && <StatusBadge status={data.status} />}
          </>
        }
      />
      <ScopeNote reason={reason} />
      {endpoint.isPending && reason === null && <Loading what="the endpoint" />}
      <ErrorNotice error={endpoint.error} />
      {data && (
        <Section title="Delivery health">
          <EndpointHealthSummary endpoint={data} />
        </Section>
      )}
      {reason === null && <EndpointAttempts id={id} />}
      {data && <Settings endpoint={data} />}
    </div>
  );
}

/** The endpoint's attempts, newest first, by cursor, filtered by outcome and day; live on the first page. */
function EndpointAttempts({ id }: { id: string }) {
  const search = route.useSearch();
  const { client } = useAuth();
  const queryClient = useQueryClient();
  const navigate = useNavigate({ from: "/webhooks/$id" });
  const status = ATTEMPT_STATUSES.find((s) => s === search.status);
  const created = {
    ...(search.from ? { gte: dayBound(search.from, false) } : {}),
    ...(search.to ? { lte: dayBound(search.to, true) } : {}),
  };
  const filters = { ...(status ? { status } : {}), ...(search.event ? { event: search.event } : {}), ...(search.from || search.to ? { created } : {}) };
  const cursor = search.after ? { starting_after: search.after } : search.before ? { ending_before: search.before } : {};
  const firstPage = !search.after && !search.before;
  const attempts = useLiveQuery("attempts", {
    queryKey: ["attempts", id, filters, cursor],
    placeholderData: keepPreviousData,
    // The first page follows new attempts; an older page stays as it was read.
    live: firstPage,
    queryFn: () => unwrap(client.webhookEndpoints.listAttempts(id, { limit: 20, ...filters, ...cursor })),
  });
  const resend = useMutation({
    mutationFn: (attempt: WebhookAttempt) => unwrap(client.events.resend(attempt.event, { webhook_endpoint: id })),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ["attempts", id] }),
  });
  const base = {
    ...(status ? { status } : {}),
    ...(search.event ? { event: search.event } : {}),
    ...(search.from ? { from: search.from } : {}),
    ...(search.to ? { to: search.to } : {}),
  };
  const setFilter = (name: "status" | "from" | "to", value: string) => void navigate({ search: { ...base, [name]: value || undefined } });
  return (
    <Section title="Attempts" actions={<RecoverFailed id={id} />}>
      <div className="form form-inline">
        <div className="field">
          <label htmlFor="a-status">Outcome</label>
          <select id="a-status" value={status ?? ""} onChange={(e) => setFilter("status", e.target.value)}>
            <option value="">Any</option>
            <Options values={ATTEMPT_STATUSES} />
          </select>
        </div>
        <div className="field">
          <label htmlFor="a-from">From (UTC day)</label>
          <input id="a-from" type="date" value={search.from ?? ""} onChange={(e) => setFilter("from", e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="a-to">To (UTC day)</label>
          <input id="a-to" type="date" value={search.to ?? ""} onChange={(e) => setFilter("to", e.target.value)} />
        </div>
        {search.event && (
          <p className="help">
            Of event <code>{search.event}</code> only.{" "}
            <Link to="/webhooks/$id" params={{ id }} search={{ ...base, event: undefined }}>
              Show every event's
            </Link>
          </p>
        )}
      </div>
      <ErrorNotice error={attempts.error ?? resend.error} />
      {resend.data && (
        <p className="notice notice-ok" role="status">
          Resent {resend.data.event}: attempt <code>{resend.data.id}</code> {resend.data.status}
          {resend.data.response_status !== null ? ` (${resend.data.response_status})` : ""}
          {status === "failed" && resend.data.status === "succeeded" ? "; it is listed under the succeeded ones." : "."}
        </p>
      )}
      {attempts.isPending && <Loading what="attempts" />}
      {attempts.data && (
        <>
          <p className="help">Newest first{firstPage ? ", updated as attempts are made" : ""}; times are local (hover for UTC).</p>
          <AttemptsTable
            attempts={attempts.data.data}
            caption={`Attempts to ${id}`}
            omit={["endpoint"]}
            onResend={(a) => resend.mutate(a)}
            resendBusy={resend.isPending}
          />
          {attempts.data.data.length === 0 && <p className="empty">{Object.keys(filters).length > 0 ? "No attempt matches." : "No attempts yet."}</p>}
          <Pager buttons={cursorPager(search, attempts.data, (c) => void navigate({ search: { ...base, ...c } }), true)} />
        </>
      )}
    </Section>
  );
}

/** Every event since a time whose deliveries to the endpoint all failed, sent again (`recover`): the bulk resend. */
function RecoverFailed({ id }: { id: string }) {
  const { client } = useAuth();
  const queryClient = useQueryClient();
  const reason = useScopeReason("webhooks:write");
  const disclosure = useDisclosure();
  const [since, setSince] = useState(() => new Date(Date.now() - 86_400_000).toISOString().slice(0, 16));
  const recover = useMutation({
    mutationFn: () => unwrap(client.webhookEndpoints.recover(id, { since: Math.floor(Date.parse(`${since}:00Z`) / 1000) })),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ["attempts", id] }),
  });
  return (
    <div className="header-disclosure">
      {disclosure.button("Resend failed deliveries")}
      {disclosure.body(
        <div className="popover">
          <ActionForm label="Resend failed deliveries" busy={recover.isPending} onSubmit={() => recover.mutate()}>
            <div className="field">
              <label htmlFor="rec-since">Every event whose deliveries all failed, since (UTC, at most 14 days ago)</label>
              <input id="rec-since" type="datetime-local" value={since} onChange={(e) => setSince(e.target.value)} required />
            </div>
            <div className="actions">
              <Button type="submit" disabled={!!reason} busy={recover.isPending}>
                Resend them
              </Button>
            </div>
          </ActionForm>
          <ErrorNotice error={recover.error} />
          {recover.data && (
            <p className="notice notice-ok" role="status">
              Scheduled {recover.data.scheduled} recovery deliver{recover.data.scheduled === 1 ? "y" : "ies"}
              {recover.data.has_more ? "; more are left: press again for the rest" : ""}.
            </p>
          )}
        </div>,
      )}
    </div>
  );
}

/** The endpoint's settings: details, enable or disable, rotate the secret, delete. */
function Settings({ endpoint: data }: { endpoint: WebhookEndpoint }) {
  const id = data.id;
  const { client } = useAuth();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: ["webhook-endpoint", id] });
    void queryClient.invalidateQueries({ queryKey: ["webhook-endpoints"] });
    void queryClient.invalidateQueries({ queryKey: ["endpoint-stats", id] });
  };
  const setStatus = useMutation({
    mutationFn: (status: "enabled" | "disabled") => unwrap(client.webhookEndpoints.update(id, { status })),
    onSuccess: (updated) => {
      queryClient.setQueryData(["webhook-endpoint", id], updated);
      refresh();
    },
  });
  const remove = useMutation({
    mutationFn: () => unwrap(client.webhookEndpoints.del(id)),
    onSuccess: () => {
      refresh();
      void navigate({ to: "/webhooks" });
    },
  });
  const [grace, setGrace] = useState("86400");
  const rotate = useMutation({
    mutationFn: () => unwrap(client.webhookEndpoints.rotateSecret(id, { expires_in: Number(grace) })),
    onSuccess: refresh,
  });
  return (
    <>
      <Section title="Settings">
        <dl className="details">
          <dt>Status</dt>
          <dd>
            <StatusBadge status={data.status} />
          </dd>
          <dt>Events</dt>
          <dd>{data.enabled_events.join(", ")}</dd>
          <dt>Signature scheme</dt>
          <dd>{data.signature_scheme}</dd>
          <dt>Created</dt>
          <dd>
            <Time seconds={data.created} />
          </dd>
        </dl>
        <div className="actions">
          {data.status === "enabled" ? (
            <Button onClick={() => setStatus.mutate("disabled")} busy={setStatus.isPending}>
              Disable
            </Button>
          ) : (
            <Button onClick={() => setStatus.mutate("enabled")} busy={setStatus.isPending}>
              Enable
            </Button>
          )}
          <ConfirmButton label="Delete endpoint" confirmLabel="Yes, delete it" busy={remove.isPending} onConfirm={() => remove.mutate()} />
        </div>
        <ErrorNotice error={setStatus.error ?? remove.error} />
        <details className="raw">
          <summary>The endpoint as JSON</summary>
          <JsonView value={data} label="The endpoint as JSON" />
        </details>
      </Section>
      <Section title="Rotate the signing secret">
        <ActionForm label="Rotate the signing secret" busy={rotate.isPending} onSubmit={() => rotate.mutate()}>
          <div className="field">
            <label htmlFor="r-grace">The old secret keeps signing for</label>
            <select id="r-grace" value={grace} onChange={(e) => setGrace(e.target.value)}>
              <option value="0">no time (drop it at once)</option>
              <option value="3600">1 hour</option>
              <option value="86400">24 hours</option>
              <option value="604800">7 days</option>
            </select>
          </div>
          <div className="actions">
            <Button type="submit" busy={rotate.isPending}>
              Rotate secret
            </Button>
          </div>
        </ActionForm>
        <ErrorNotice error={rotate.error} />
        {rotate.data && <SecretOnce endpoint={rotate.data} />}
      </Section>
    </>
  );
}
