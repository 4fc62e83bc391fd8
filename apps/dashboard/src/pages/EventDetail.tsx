import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { getRouteApi, Link } from "@tanstack/react-router";
import { type ApiFailure, unwrap, type WebhookEndpoint } from "../api/client";
import { useAuth } from "../app/auth";
import { AttemptsTable } from "../components/Attempts";
import { ErrorNotice } from "../components/ErrorNotice";
import { IdLink } from "../components/IdLink";
import { Button, Json, Loading, ScopeNote, Section, StatusBadge, Time, useScopeReason } from "../components/ui";

const route = getRouteApi("/events/$id");

export function EventDetailPage() {
  const { id } = route.useParams();
  const { client } = useAuth();
  const event = useQuery({ queryKey: ["event", id], queryFn: () => unwrap(client.events.retrieve(id)) });
  const object = event.data?.data.object as { id?: string } | undefined;
  return (
    <div>
      <p className="crumbs">
        <Link to="/events">Events</Link> / <code>{id}</code>
      </p>
      <h1>{event.data ? event.data.type : "Event"}</h1>
      {event.isPending && <Loading what="the event" />}
      <ErrorNotice error={event.error} />
      {event.data && (
        <>
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
              <dt>Endpoints yet to answer 2xx</dt>
              <dd>{event.data.pending_webhooks}</dd>
            </dl>
          </Section>
          <Section title="Payload">
            <Json value={event.data} label="The event as JSON" />
          </Section>
          <Deliveries eventId={id} />
        </>
      )}
    </div>
  );
}

/** Each endpoint's delivery state for this event (its latest attempt), with resend; updates every second while visible. */
function Deliveries({ eventId }: { eventId: string }) {
  const { client } = useAuth();
  const reason = useScopeReason("webhooks:write");
  const endpoints = useQuery({
    queryKey: ["webhook-endpoints"],
    enabled: reason === null,
    queryFn: () => unwrap(client.webhookEndpoints.list({ limit: 100 })),
  });
  return (
    <Section title="Deliveries to each endpoint">
      <ScopeNote reason={reason} />
      <ErrorNotice error={endpoints.error} />
      {endpoints.data && endpoints.data.data.length === 0 && (
        <p className="empty">
          No webhook endpoints. <Link to="/webhooks">Add one</Link>.
        </p>
      )}
      {endpoints.data?.data.map((endpoint) => (
        <EndpointDelivery key={endpoint.id} eventId={eventId} endpoint={endpoint} />
      ))}
    </Section>
  );
}

function EndpointDelivery({ eventId, endpoint }: { eventId: string; endpoint: WebhookEndpoint }) {
  const { client } = useAuth();
  const queryClient = useQueryClient();
  const attempts = useQuery({
    queryKey: ["attempts", endpoint.id, { event: eventId }],
    refetchInterval: 1_000,
    queryFn: () => unwrap(client.webhookEndpoints.listAttempts(endpoint.id, { event: eventId, limit: 10 })),
  });
  const resend = useMutation({
    mutationFn: () => unwrap(client.events.resend(eventId, { webhook_endpoint: endpoint.id })),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ["attempts", endpoint.id] }),
  });
  const latest = attempts.data?.data[0];
  const subscribed = endpoint.enabled_events.includes("*") || endpoint.enabled_events.length > 0;
  return (
    <section className="delivery" aria-label={`Delivery to ${endpoint.url}`}>
      <h3>
        <IdLink id={endpoint.id} /> <span className="url">{endpoint.url}</span> <StatusBadge status={endpoint.status} />
      </h3>
      <p>
        State:{" "}
        {latest ? (
          <>
            <StatusBadge status={latest.status} /> (latest attempt <Time seconds={latest.created} />, response {latest.response_status ?? "none"})
          </>
        ) : (
          <span>{subscribed ? "no attempt yet (not subscribed to this type, or not yet due)" : "not subscribed"}</span>
        )}
      </p>
      <Button onClick={() => resend.mutate()} busy={resend.isPending} aria-label={`Resend to ${endpoint.url}`}>
        Resend to this endpoint
      </Button>
      {resend.data && (
        <span className="notice-inline" role="status">
          {" "}
          Scheduled attempt <code>{resend.data.id}</code>.
        </span>
      )}
      <ErrorNotice error={resend.error as ApiFailure | null} />
      <ErrorNotice error={attempts.error} />
      {attempts.data && attempts.data.data.length > 0 && (
        <AttemptsTable attempts={attempts.data.data} caption={`Attempts of ${eventId} to ${endpoint.id}`} omit={["event", "endpoint"]} />
      )}
    </section>
  );
}
