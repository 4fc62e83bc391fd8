import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { unwrap } from "../api/client";
import { useAuth } from "../app/auth";
import { PageHeader, useDisclosure } from "../components/Disclosure";
import { EndpointHealthTable } from "../components/EndpointHealth";
import { ErrorNotice } from "../components/ErrorNotice";
import { SecretOnce } from "../components/SecretOnce";
import { ActionForm, Button, Loading, ScopeNote, Section, useScopeReason } from "../components/ui";
import { usePageTitle } from "../lib/title";
import { EVENT_TYPES, type EventType } from "../vocabulary";

type EnabledEvent = "*" | EventType;

/** The endpoints with their delivery health, failing ones first; a new one behind "New endpoint". */
export function WebhooksPage() {
  const { client } = useAuth();
  const reason = useScopeReason("webhooks:write");
  const endpoints = useQuery({
    queryKey: ["webhook-endpoints"],
    enabled: reason === null,
    queryFn: () => unwrap(client.webhookEndpoints.list({ limit: 100 })),
  });
  const create = useDisclosure();
  usePageTitle("Webhook endpoints");
  return (
    <div>
      <PageHeader title="Webhook endpoints">{reason === null && create.button("New endpoint")}</PageHeader>
      <ScopeNote reason={reason ? `${reason} Every webhook endpoint operation needs it, reading included.` : null} />
      {reason === null && create.body(<CreateEndpoint />)}
      <Section title="Endpoints and their delivery health (at most 16 per mode)">
        {endpoints.isPending && reason === null && <Loading what="endpoints" />}
        <ErrorNotice error={endpoints.error} />
        {endpoints.data && endpoints.data.data.length > 0 && (
          <EndpointHealthTable endpoints={endpoints.data.data} caption="Webhook endpoints and their delivery health" />
        )}
        {endpoints.data && endpoints.data.data.length === 0 && <p className="empty">No endpoints yet.</p>}
      </Section>
    </div>
  );
}

function CreateEndpoint() {
  const { client } = useAuth();
  const queryClient = useQueryClient();
  const [url, setUrl] = useState("");
  const [description, setDescription] = useState("");
  const [events, setEvents] = useState<EnabledEvent[]>(["*"]);
  const [scheme, setScheme] = useState<"v1" | "v1a">("v1");
  const create = useMutation({
    mutationFn: () =>
      unwrap(client.webhookEndpoints.create({ url, enabled_events: events, signature_scheme: scheme, ...(description ? { description } : {}) })),
    onSuccess: () => {
      setUrl("");
      setDescription("");
      void queryClient.invalidateQueries({ queryKey: ["webhook-endpoints"] });
    },
  });
  const toggle = (type: EnabledEvent, on: boolean) => {
    if (type === "*") setEvents(on ? ["*"] : []);
    else setEvents((current) => (on ? [...current.filter((t) => t !== "*"), type] : current.filter((t) => t !== type)));
  };
  return (
    <Section title="New endpoint">
      <ActionForm label="Add a webhook endpoint" inline={false} busy={create.isPending} onSubmit={() => create.mutate()}>
        <label htmlFor="w-url">URL (https)</label>
        <input id="w-url" type="url" required value={url} placeholder="https://example.com/webhooks" onChange={(e) => setUrl(e.target.value)} />
        <label htmlFor="w-description">Description (optional)</label>
        <input id="w-description" value={description} maxLength={500} onChange={(e) => setDescription(e.target.value)} />
        <EventChoices events={events} toggle={toggle} />
        <fieldset>
          <legend>Signature scheme</legend>
          <label className="check">
            <input type="radio" name="w-scheme" value="v1" checked={scheme === "v1"} onChange={() => setScheme("v1")} /> v1: HMAC-SHA256 with a shared secret
          </label>
          <label className="check">
            <input type="radio" name="w-scheme" value="v1a" checked={scheme === "v1a"} onChange={() => setScheme("v1a")} /> v1a: Ed25519, receivers verify with
            a public key
          </label>
        </fieldset>
        <div className="actions">
          <Button type="submit" disabled={events.length === 0} busy={create.isPending}>
            Add endpoint
          </Button>
        </div>
      </ActionForm>
      <ErrorNotice error={create.error} />
      {create.data && <SecretOnce endpoint={create.data} />}
    </Section>
  );
}

/** What a new endpoint may subscribe to: every event, or any of the types the API records. */
export function EventChoices({ events, toggle }: { events: readonly EnabledEvent[]; toggle: (type: EnabledEvent, on: boolean) => void }) {
  return (
    <fieldset>
      <legend>Events to send</legend>
      <label className="check">
        <input type="checkbox" checked={events.includes("*")} onChange={(e) => toggle("*", e.target.checked)} /> Every event (*)
      </label>
      {EVENT_TYPES.map((t) => (
        <label className="check" key={t}>
          <input type="checkbox" checked={events.includes(t)} disabled={events.includes("*")} onChange={(e) => toggle(t, e.target.checked)} /> {t}
        </label>
      ))}
    </fieldset>
  );
}
