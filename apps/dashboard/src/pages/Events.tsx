import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { getRouteApi, useNavigate } from "@tanstack/react-router";
import { useState } from "react";
import { unwrap } from "../api/client";
import { useAuth } from "../app/auth";
import { ErrorNotice } from "../components/ErrorNotice";
import { IdLink } from "../components/IdLink";
import { Loading, ScopeNote, Section, useScopeReason } from "../components/ui";
import { formatTime } from "../lib/time";

const route = getRouteApi("/events");

export const EVENT_TYPES = ["resource.created", "resource.updated", "resource.deleted", "job.succeeded", "job.failed", "job.canceled", "webhook_endpoint.disabled"] as const;

/** Events, newest first, by cursor (never counted); filter by type (exact or `resource.*`) or by object. */
export function EventsPage() {
  const search = route.useSearch();
  const navigate = useNavigate({ from: "/events" });
  const { client } = useAuth();
  const reason = useScopeReason("events:read");
  const [type, setType] = useState(search.type ?? "");
  const [object, setObject] = useState(search.object ?? "");
  const events = useQuery({
    queryKey: ["events", search],
    enabled: reason === null,
    placeholderData: keepPreviousData,
    queryFn: () =>
      unwrap(
        client.GET("/v1/events", {
          params: {
            query: {
              limit: 20,
              ...(search.type ? { type: search.type } : {}),
              ...(search.object ? { object: search.object } : {}),
              ...(search.after ? { starting_after: search.after } : search.before ? { ending_before: search.before } : {}),
            },
          },
        }),
      ),
  });
  const base = { ...(search.type ? { type: search.type } : {}), ...(search.object ? { object: search.object } : {}) };
  const rows = events.data?.data ?? [];
  const atStart = !search.after && !search.before;
  return (
    <div>
      <h1>Events</h1>
      <Section title="Filter">
        <form
          className="form form-inline"
          aria-label="Filter events"
          onSubmit={(e) => {
            e.preventDefault();
            void navigate({ search: { ...(type ? { type } : {}), ...(object.trim() ? { object: object.trim() } : {}) } });
          }}
        >
          <div className="field">
            <label htmlFor="ev-type">Type</label>
            <select id="ev-type" value={type} onChange={(e) => setType(e.target.value)}>
              <option value="">Any type</option>
              <option value="resource.*">resource.*</option>
              <option value="job.*">job.*</option>
              {EVENT_TYPES.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor="ev-object">Object id</label>
            <input id="ev-object" value={object} placeholder="res_..." onChange={(e) => setObject(e.target.value)} />
          </div>
          <div className="actions">
            <button type="submit">Apply</button>
          </div>
        </form>
      </Section>
      <Section title="Events, newest first">
        <ScopeNote reason={reason} />
        {events.isPending && reason === null && <Loading what="events" />}
        <ErrorNotice error={events.error} />
        {events.data && (
          <table className="table">
            <caption className="sr-only">Events</caption>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Type</th>
                <th scope="col">Object</th>
                <th scope="col">Sequence</th>
                <th scope="col">Pending webhooks</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((e) => (
                <tr key={e.id}>
                  <td>
                    <IdLink id={e.id} />
                  </td>
                  <td>{e.type}</td>
                  <td>
                    <IdLink id={(e.data.object as { id?: string }).id} />
                  </td>
                  <td>{e.sequence}</td>
                  <td>{e.pending_webhooks}</td>
                  <td className="when">{formatTime(e.created)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {events.data && rows.length === 0 && <p className="empty">No events.</p>}
        {events.data && (
          <nav className="pager" aria-label="Pages">
            <button type="button" disabled={atStart} onClick={() => void navigate({ search: base })}>
              First page
            </button>
            <button
              type="button"
              disabled={atStart || (!!search.before && !events.data.has_more) || !rows[0]}
              onClick={() => void navigate({ search: { ...base, before: rows[0]!.id } })}
            >
              Newer
            </button>
            <button
              type="button"
              disabled={(!search.before && !events.data.has_more) || !rows.at(-1)}
              onClick={() => void navigate({ search: { ...base, after: rows.at(-1)!.id } })}
            >
              Older
            </button>
          </nav>
        )}
      </Section>
    </div>
  );
}
