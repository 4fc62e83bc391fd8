import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { getRouteApi, Link, useNavigate } from "@tanstack/react-router";
import { useState } from "react";
import { unwrap, type WebhookAttempt } from "../api/client";
import { useAuth } from "../app/auth";
import { AttemptsTable } from "../components/Attempts";
import { ErrorNotice } from "../components/ErrorNotice";
import { SecretOnce } from "../components/SecretOnce";
import { ActionForm, Button, ConfirmButton, Json, Loading, ScopeNote, Section, StatusBadge, Time, useScopeReason } from "../components/ui";

const route = getRouteApi("/webhooks/$id");

export function WebhookDetailPage() {
  const { id } = route.useParams();
  const search = route.useSearch();
  const { client } = useAuth();
  const reason = useScopeReason("webhooks:write");
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const endpoint = useQuery({
    queryKey: ["webhook-endpoint", id],
    enabled: reason === null,
    queryFn: () => unwrap(client.webhookEndpoints.retrieve(id)),
  });
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: ["webhook-endpoint", id] });
    void queryClient.invalidateQueries({ queryKey: ["webhook-endpoints"] });
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
  const [since, setSince] = useState(() => new Date(Date.now() - 86_400_000).toISOString().slice(0, 16));
  const recover = useMutation({
    mutationFn: () => unwrap(client.webhookEndpoints.recover(id, { since: Math.floor(Date.parse(`${since}:00Z`) / 1000) })),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ["attempts", id] }),
  });
  const data = endpoint.data;
  return (
    <div>
      <p className="crumbs">
        <Link to="/webhooks">Webhook endpoints</Link> / <code>{id}</code>
      </p>
      <h1>{data ? data.url : "Webhook endpoint"}</h1>
      <ScopeNote reason={reason} />
      {endpoint.isPending && reason === null && <Loading what="the endpoint" />}
      <ErrorNotice error={endpoint.error} />
      {data && (
        <>
          <Section title="Details">
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
            <Json value={data} label="The endpoint as JSON" />
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
          <Section title="Recover failed deliveries">
            <ActionForm label="Recover failed deliveries" busy={recover.isPending} onSubmit={() => recover.mutate()}>
              <div className="field">
                <label htmlFor="rec-since">Since (UTC, at most 14 days ago)</label>
                <input id="rec-since" type="datetime-local" value={since} onChange={(e) => setSince(e.target.value)} required />
              </div>
              <div className="actions">
                <Button type="submit" busy={recover.isPending}>
                  Recover
                </Button>
              </div>
            </ActionForm>
            <ErrorNotice error={recover.error} />
            {recover.data && (
              <p className="notice notice-ok" role="status">
                Scheduled {recover.data.scheduled} recovery deliver{recover.data.scheduled === 1 ? "y" : "ies"}.
              </p>
            )}
          </Section>
        </>
      )}
      {reason === null && <EndpointAttempts id={id} status={search.status} event={search.event} />}
    </div>
  );
}

/** The endpoint's attempts, newest first; they update every second while the tab is visible. */
function EndpointAttempts({ id, status, event }: { id: string; status: string | undefined; event: string | undefined }) {
  const { client } = useAuth();
  const queryClient = useQueryClient();
  const navigate = useNavigate({ from: "/webhooks/$id" });
  const filter: { status?: "succeeded" | "failed"; event?: string } = { ...(status === "succeeded" || status === "failed" ? { status } : {}), ...(event ? { event } : {}) };
  const attempts = useQuery({
    queryKey: ["attempts", id, filter],
    refetchInterval: 1_000,
    placeholderData: keepPreviousData,
    queryFn: () => unwrap(client.webhookEndpoints.listAttempts(id, { limit: 20, ...filter })),
  });
  const resend = useMutation({
    mutationFn: (attempt: WebhookAttempt) => unwrap(client.events.resend(attempt.event, { webhook_endpoint: id })),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ["attempts", id] }),
  });
  return (
    <Section title="Attempts (live)">
      <div className="form form-inline">
        <div className="field">
          <label htmlFor="a-status">Status</label>
          <select id="a-status" value={status ?? ""} onChange={(e) => void navigate({ search: (s) => ({ ...s, status: e.target.value || undefined }) })}>
            <option value="">Any</option>
            <option value="succeeded">succeeded</option>
            <option value="failed">failed</option>
          </select>
        </div>
      </div>
      <ErrorNotice error={attempts.error ?? resend.error} />
      {resend.data && (
        <p className="notice notice-ok" role="status">
          Resent: attempt <code>{resend.data.id}</code> scheduled.
        </p>
      )}
      {attempts.data && (
        <AttemptsTable attempts={attempts.data.data} caption={`Attempts to ${id}`} omit={["endpoint"]} onResend={(a) => resend.mutate(a)} resendBusy={resend.isPending} />
      )}
      {attempts.data && attempts.data.data.length === 0 && <p className="empty">No attempts yet.</p>}
    </Section>
  );
}
