import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { getRouteApi, Link, useNavigate } from "@tanstack/react-router";
import { useEffect, useState } from "react";
import { type Event, type Resource, unwrap } from "../api/client";
import { useAuth } from "../app/auth";
import { ErrorNotice } from "../components/ErrorNotice";
import { IdLink } from "../components/IdLink";
import { PageHeader, useDisclosure } from "../components/Disclosure";
import { JsonView } from "../components/JsonView";
import { ActionForm, Button, ConfirmButton, Loading, Options, ScopeNote, Section, StatusBadge, Time, useScopeReason } from "../components/ui";
import { useLiveQuery } from "../lib/live";
import { usePageTitle } from "../lib/title";
import { RESOURCE_STATUSES } from "../lib/filters";
import { metadataChange, metadataText, parseMetadataText } from "../lib/metadata";
import { type Column, DataTable } from "../components/DataTable";

const route = getRouteApi("/resources/$id");

export function ResourceDetailPage() {
  const { id } = route.useParams();
  const { client } = useAuth();
  const resource = useQuery({ queryKey: ["resource", id], queryFn: () => unwrap(client.resources.retrieve(id)) });
  const edit = useDisclosure();
  usePageTitle(id, resource.data?.name ?? "Resource");
  return (
    <div>
      <PageHeader
        title={resource.data ? resource.data.name : "Resource"}
        crumbs={
          <>
            <Link to="/resources">Resources</Link> / <code>{id}</code>
          </>
        }
      >
        {resource.data && edit.button("Edit")}
      </PageHeader>
      {resource.isPending && <Loading what="the resource" />}
      <ErrorNotice error={resource.error} />
      {resource.data && (
        <>
          {edit.body(<EditResource resource={resource.data} />)}
          <Section title="Details">
            <dl className="details">
              <dt>Id</dt>
              <dd>
                <code>{resource.data.id}</code>
              </dd>
              <dt>Status</dt>
              <dd>
                <StatusBadge status={resource.data.status} />
              </dd>
              <dt>Created</dt>
              <dd>
                <Time seconds={resource.data.created} />
              </dd>
            </dl>
            <JsonView value={resource.data} label="The resource as JSON" openDepth={1} />
          </Section>
        </>
      )}
      <ResourceEvents id={id} />
    </div>
  );
}

function EditResource({ resource }: { resource: Resource }) {
  const { client } = useAuth();
  const reason = useScopeReason("resources:write");
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [name, setName] = useState(resource.name);
  const [status, setStatus] = useState(resource.status);
  const [metadata, setMetadata] = useState(metadataText(resource.metadata));
  useEffect(() => {
    setName(resource.name);
    setStatus(resource.status);
    setMetadata(metadataText(resource.metadata));
  }, [resource]);
  const update = useMutation({
    mutationFn: () => unwrap(client.resources.update(resource.id, { name, status, metadata: metadataChange(resource.metadata, parseMetadataText(metadata)) })),
    onSuccess: (updated) => {
      queryClient.setQueryData(["resource", resource.id], updated);
      void queryClient.invalidateQueries({ queryKey: ["resource-events", resource.id] });
      void queryClient.invalidateQueries({ queryKey: ["resources"] });
    },
  });
  const remove = useMutation({
    mutationFn: () => unwrap(client.resources.del(resource.id)),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ["resources"] });
      void navigate({ to: "/resources", search: {} });
    },
  });
  return (
    <Section title="Edit">
      <ScopeNote reason={reason} />
      <ActionForm label="Edit the resource" inline={false} busy={update.isPending} onSubmit={() => update.mutate()}>
        <label htmlFor="e-name">Name</label>
        <input id="e-name" value={name} required maxLength={200} disabled={!!reason} onChange={(e) => setName(e.target.value)} />
        <label htmlFor="e-status">Status</label>
        <select id="e-status" value={status} disabled={!!reason} onChange={(e) => setStatus(e.target.value as Resource["status"])}>
          <Options values={RESOURCE_STATUSES} />
        </select>
        <label htmlFor="e-metadata">Metadata (one key=value per line; remove a line to remove the key)</label>
        <textarea id="e-metadata" rows={4} value={metadata} disabled={!!reason} onChange={(e) => setMetadata(e.target.value)} />
        <div className="actions">
          <Button type="submit" disabled={!!reason} busy={update.isPending}>
            Save changes
          </Button>
          <ConfirmButton label="Delete resource" confirmLabel="Yes, delete it" disabled={!!reason} busy={remove.isPending} onConfirm={() => remove.mutate()} />
        </div>
      </ActionForm>
      {update.isSuccess && (
        <p className="notice notice-ok" role="status">
          Saved.
        </p>
      )}
      <ErrorNotice error={update.error ?? remove.error} />
    </Section>
  );
}

/** The resource's events in `sequence` order (the list answers newest first; this page shows the story). */
const RESOURCE_EVENT_COLUMNS: readonly Column<Event>[] = [
  { header: "Sequence", cell: (e) => e.sequence },
  { header: "Event", cell: (e) => <IdLink id={e.id} /> },
  { header: "Type", cell: (e) => e.type },
  { header: "Pending webhooks", cell: (e) => e.pending_webhooks },
  { header: "Created", cell: (e) => <Time seconds={e.created} />, className: "when" },
];

function ResourceEvents({ id }: { id: string }) {
  const { client } = useAuth();
  const reason = useScopeReason("events:read");
  // An event is listed within about a second of its change: the list follows on its own while the tab is visible.
  const events = useLiveQuery("events", {
    queryKey: ["resource-events", id],
    enabled: reason === null,
    queryFn: () => unwrap(client.events.list({ object: id, limit: 100 })),
  });
  const sorted = [...(events.data?.data ?? [])].sort((a, b) => a.sequence - b.sequence);
  return (
    <Section title="Events of this resource, by sequence">
      <ScopeNote reason={reason} />
      {events.isPending && reason === null && <Loading what="events" />}
      <ErrorNotice error={events.error} />
      {events.data && <DataTable caption={`Events of ${id}`} columns={RESOURCE_EVENT_COLUMNS} rows={sorted} />}
      {events.data?.has_more && (
        <p className="help">
          Showing the latest 100.{" "}
          <Link to="/events" search={{ object: id }}>
            All of them on the events page
          </Link>
          .
        </p>
      )}
      {events.data && events.data.data.length === 0 && <p className="empty">No events yet (an event appears within about a second of a change).</p>}
    </Section>
  );
}
