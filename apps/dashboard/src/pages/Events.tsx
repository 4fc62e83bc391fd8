import { keepPreviousData } from "@tanstack/react-query";
import { getRouteApi, useNavigate } from "@tanstack/react-router";
import { type Event, unwrap } from "../api/client";
import { useAuth } from "../app/auth";
import { IdLink } from "../components/IdLink";
import type { Column } from "../components/DataTable";
import { cursorPager, type FilterSpec, ListPage } from "../components/ListPage";
import { Time, useScopeReason } from "../components/ui";
import { followEvents, useLiveQuery } from "../lib/live";
import { EVENT_TYPE_PREFIXES, EVENT_TYPES } from "../vocabulary";

const route = getRouteApi("/events");

export const EVENT_FILTERS: FilterSpec = {
  apply: "submit",
  idPrefix: "ev",
  section: "Filter",
  formLabel: "Filter events",
  fields: [
    { name: "type", label: "Type", kind: "select", anyLabel: "Any type", options: [...EVENT_TYPE_PREFIXES, ...EVENT_TYPES] },
    { name: "object", label: "Object id", placeholder: "res_..." },
  ],
};

const EVENT_COLUMNS: readonly Column<Event>[] = [
  { header: "Event", cell: (e) => <IdLink id={e.id} /> },
  { header: "Type", cell: (e) => e.type },
  { header: "Object", cell: (e) => <IdLink id={(e.data.object as { id?: string }).id} /> },
  { header: "Sequence", cell: (e) => e.sequence },
  { header: "Pending webhooks", cell: (e) => e.pending_webhooks },
  { header: "Created", cell: (e) => <Time seconds={e.created} />, className: "when" },
];

/** Events, newest first, by cursor (never counted); filter by type (exact or `resource.*`) or by object. */
export function EventsPage() {
  const search = route.useSearch();
  const navigate = useNavigate({ from: "/events" });
  const { client } = useAuth();
  const reason = useScopeReason("events:read");
  const first = !search.after && !search.before;
  // The first page follows the account's events as they are made (the filters' own); an older page stays as read.
  const events = useLiveQuery("events", {
    queryKey: ["events", search],
    enabled: reason === null,
    live: first,
    follow: followEvents(client, { ...(search.type ? { types: [search.type] } : {}), ...(search.object ? { object: search.object } : {}) }),
    placeholderData: keepPreviousData,
    queryFn: () =>
      unwrap(
        client.events.list({
          limit: 20,
          ...(search.type ? { type: search.type } : {}),
          ...(search.object ? { object: search.object } : {}),
          ...(search.after ? { starting_after: search.after } : search.before ? { ending_before: search.before } : {}),
        }),
      ),
  });
  const base = { ...(search.type ? { type: search.type } : {}), ...(search.object ? { object: search.object } : {}) };
  return (
    <ListPage
      title="Events"
      filters={EVENT_FILTERS}
      values={base}
      onFilter={(values) => void navigate({ search: values })}
      list={{
        title: "Events, newest first",
        caption: "Events",
        what: "events",
        reason,
        query: events,
        columns: EVENT_COLUMNS,
        empty: "No events.",
        pager: (page) => cursorPager(search, page, (cursor) => void navigate({ search: { ...base, ...cursor } }), true),
      }}
    />
  );
}
