import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { getRouteApi, Link } from "@tanstack/react-router";
import type { Schemas } from "@rms/sdk";
import { unwrap, type WebhookAttempt, type WebhookEndpoint } from "../api/client";
import { useAuth } from "../app/auth";
import { AttemptsTable, ResponseBody } from "../components/Attempts";
import { PageHeader } from "../components/Disclosure";
import { ErrorNotice } from "../components/ErrorNotice";
import { IdLink } from "../components/IdLink";
import { JsonView } from "../components/JsonView";
import { Button, Loading, ScopeNote, Section, StatusBadge, StatusCode, Time, useScopeReason } from "../components/ui";
import { useLiveQueries, useLiveQuery } from "../lib/live";
import { relativeTime } from "../lib/time";
import { usePageTitle } from "../lib/title";

const route = getRouteApi("/events/$id");

type Delivery = Schemas["WebhookDelivery"];
type AttemptPage = Schemas["WebhookAttemptList"];

/** The event page answers "did it arrive, and if not, why and what next": the deliveries first, then the event. */
export function EventDetailPage() {
  const { id } = route.useParams();
  const { client } = useAuth();
  const event = useQuery({ queryKey: ["event", id], queryFn: () => unwrap(client.events.retrieve(id)) });
  const object = event.data?.data.object as { id?: string } | undefined;
  usePageTitle(id, event.data?.type ?? "Event");
  return (
    <div>
      <PageHeader
        title={event.data ? event.data.type : "Event"}
        crumbs={
          <>
            <Link to="/events">Events</Link> / <code>{id}</code>
          </>
        }
      />
      {event.isPending && <Loading what="the event" />}
      <ErrorNotice error={event.error} />
      {event.data && (
        <>
          <Deliveries eventId={id} type={event.data.type} pending={event.data.pending_webhooks} />
          <Section title="Details">
            <dl className="details">
              <dt>Id</dt>
              <dd>
                <code>{event.data.id}</code>
              </dd>
              <dt>Object</dt>
              <dd>
                <IdLink id={object?.id} />
              </dd>
              <dt>Sequence</dt>
              <dd>{event.data.sequence}</dd>
              <dt>Created</dt>
              <dd>
                <Time seconds={event.data.created} />
              </dd>
              <dt>Request</dt>
              <dd>
                <IdLink id={event.data.request?.id ?? null} />
              </dd>
            </dl>
          </Section>
          <Section title="Payload">
            <JsonView value={event.data} label="The event as JSON" openDepth={1} />
          </Section>
        </>
      )}
    </div>
  );
}

interface EndpointDelivery {
  readonly endpoint: WebhookEndpoint;
  readonly delivery: Delivery | undefined;
  readonly attempts: AttemptPage | undefined;
  readonly rank: number;
}

/** Failing deliveries first: gave up, then retrying after a failure, then waiting, delivered, never sent. */
function rankOf(delivery: Delivery | undefined, latest: WebhookAttempt | undefined): number {
  if (!delivery) return 5;
  if (delivery.status === "failed") return 0;
  if (delivery.status === "pending") return latest?.status === "failed" ? 1 : 2;
  if (delivery.status === "succeeded") return latest?.status === "failed" ? 1 : 3;
  return 4;
}

/** Each endpoint's delivery of this event (its state, its latest failure, its attempts), failing first; live. */
function Deliveries({ eventId, type, pending }: { eventId: string; type: string; pending: number }) {
  const { client } = useAuth();
  const reason = useScopeReason("webhooks:write");
  const endpoints = useQuery({
    queryKey: ["webhook-endpoints"],
    enabled: reason === null,
    queryFn: () => unwrap(client.webhookEndpoints.list({ limit: 100 })),
  });
  const deliveries = useLiveQuery("attempts", {
    queryKey: ["event-deliveries", eventId],
    enabled: reason === null,
    queryFn: () => unwrap(client.events.listDeliveries(eventId)),
  });
  const list = endpoints.data?.data ?? [];
  const attempts = useLiveQueries<AttemptPage>(
    "attempts",
    list.map((endpoint) => ({
      queryKey: ["attempts", endpoint.id, { event: eventId }],
      queryFn: () => unwrap(client.webhookEndpoints.listAttempts(endpoint.id, { event: eventId, limit: 20 })),
    })),
  );
  const rows: EndpointDelivery[] = list
    .map((endpoint, i) => {
      const delivery = deliveries.data?.data.find((d) => d.webhook_endpoint === endpoint.id);
      const page = attempts[i]?.data;
      return { endpoint, delivery, attempts: page, rank: rankOf(delivery, page?.data[0]) };
    })
    .sort((a, b) => a.rank - b.rank);
  return (
    <Section title="Deliveries">
      <ScopeNote reason={reason} />
      <ErrorNotice error={endpoints.error ?? deliveries.error} />
      {endpoints.data && list.length === 0 && (
        <p className="empty">
          No webhook endpoints. <Link to="/webhooks">Add one</Link>.
        </p>
      )}
      {list.length > 0 && (
        <p className="help">
          {pending === 0
            ? "Every endpoint that was sent this event answered 2xx."
            : `${pending} endpoint${pending === 1 ? " has" : "s have"} not answered 2xx yet.`}
        </p>
      )}
      {rows.map((row) => (
        <EndpointDeliveryView key={row.endpoint.id} eventId={eventId} type={type} row={row} />
      ))}
    </Section>
  );
}

/** What became of the delivery, in words: the next retry, "gave up" and why, delivered, or never sent. */
function DeliveryState({ delivery, type }: { delivery: Delivery | undefined; type: string }) {
  if (!delivery) return <span className="help">…</span>;
  switch (delivery.status) {
    case "pending":
      return (
        <span>
          <span className="badge badge-running">retrying</span>{" "}
          {delivery.next_attempt_at === null ? (
            "next attempt being scheduled"
          ) : (
            <>
              next retry <Time seconds={delivery.next_attempt_at} /> ({relativeTime(delivery.next_attempt_at)})
            </>
          )}
          {delivery.attempts > 0 && `, after ${delivery.attempts} attempt${delivery.attempts === 1 ? "" : "s"}`}
        </span>
      );
    case "failed":
      return (
        <span>
          <span className="badge badge-failed">gave up</span> after {delivery.attempts} attempt{delivery.attempts === 1 ? "" : "s"}
          {delivery.ended_reason && (
            <>
              {" "}
              (<code>{delivery.ended_reason}</code>)
            </>
          )}
          ; Resend tries once more
        </span>
      );
    case "succeeded":
      return (
        <span>
          <span className="badge badge-succeeded">delivered</span>
        </span>
      );
    default:
      return (
        <span>
          <span className="badge">not sent</span>{" "}
          {delivery.subscribed ? "the endpoint did not exist or did not subscribe when the event happened" : `not subscribed to ${type}`}
        </span>
      );
  }
}

function EndpointDeliveryView({ eventId, type, row }: { eventId: string; type: string; row: EndpointDelivery }) {
  const { client } = useAuth();
  const queryClient = useQueryClient();
  const writeReason = useScopeReason("webhooks:write");
  const { endpoint, delivery } = row;
  const resend = useMutation({
    mutationFn: () => unwrap(client.events.resend(eventId, { webhook_endpoint: endpoint.id })),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ["attempts", endpoint.id] });
      void queryClient.invalidateQueries({ queryKey: ["event-deliveries", eventId] });
    },
  });
  const list = row.attempts?.data ?? [];
  const latest = list[0];
  const latestFailure = latest?.status === "failed" ? latest : undefined;
  const subscribed = delivery?.subscribed ?? (endpoint.enabled_events.includes("*") || endpoint.enabled_events.includes(type as never));
  return (
    <section className={`delivery${row.rank <= 1 ? " delivery-failing" : ""}`} aria-label={`Delivery to ${endpoint.url}`}>
      <h3>
        <IdLink id={endpoint.id} /> <span className="url">{endpoint.url}</span> {endpoint.status !== "enabled" && <StatusBadge status={endpoint.status} />}
      </h3>
      <p className="delivery-state">
        <DeliveryState delivery={delivery} type={type} />
      </p>
      {latestFailure && (
        <div className="last-failure">
          <p>
            Latest attempt failed: <StatusCode status={latestFailure.response_status} /> <code>{latestFailure.failure_code}</code>,{" "}
            <Time seconds={latestFailure.created} />, {latestFailure.duration_ms} ms
          </p>
          <ResponseBody attempt={latestFailure} open />
        </div>
      )}
      {subscribed ? (
        <div className="actions">
          <Button
            disabled={!!writeReason}
            onClick={() => resend.mutate()}
            busy={resend.isPending}
            className={row.rank <= 1 ? undefined : "secondary"}
            aria-label={`Resend to ${endpoint.url}`}
          >
            Resend
          </Button>
          {resend.data && (
            <span className="notice-inline" role="status">
              Attempt <code>{resend.data.id}</code>: {resend.data.status}
              {resend.data.response_status !== null && <> ({resend.data.response_status})</>}.
            </span>
          )}
        </div>
      ) : (
        <p className="help">
          Resend is not offered: the endpoint does not subscribe to {type} events (its events: {endpoint.enabled_events.join(", ")}).
        </p>
      )}
      <ErrorNotice error={resend.error} />
      {list.length > 0 && (
        <details className="attempts-of">
          <summary>
            {list.length}
            {row.attempts?.has_more ? "+" : ""} attempt{list.length === 1 ? "" : "s"}, newest first
          </summary>
          <AttemptsTable attempts={list} caption={`Attempts of ${eventId} to ${endpoint.id}`} omit={["event", "endpoint"]} />
        </details>
      )}
    </section>
  );
}
