import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { getRouteApi, Link, useNavigate } from "@tanstack/react-router";
import { useState, type FormEvent } from "react";
import { type Resource, unwrap } from "../api/client";
import { useAuth } from "../app/auth";
import { ErrorNotice } from "../components/ErrorNotice";
import { IdLink } from "../components/IdLink";
import { Loading, ScopeNote, Section, StatusBadge, useScopeReason } from "../components/ui";
import { firstPage, isFiltered, listQuery, RESOURCE_STATUSES, type ResourceFilters, searchQueryOf } from "../lib/filters";
import { parseMetadataText } from "../lib/metadata";
import { formatTime } from "../lib/time";

const route = getRouteApi("/resources");
const PAGE = 20;

interface Page {
  readonly data: Resource[];
  readonly has_more: boolean;
  readonly next_page?: string | null;
}

/** Resources: every list filter and search, by cursor (never a count of the account), and create. */
export function ResourcesPage() {
  const filters = route.useSearch();
  const navigate = useNavigate({ from: "/resources" });
  const { client } = useAuth();
  const readReason = useScopeReason("resources:read");

  const searching = filters.q !== undefined;
  const page = useQuery<Page>({
    queryKey: ["resources", filters],
    enabled: readReason === null,
    placeholderData: keepPreviousData,
    queryFn: () =>
      searching
        ? unwrap(client.GET("/v1/resources/search", { params: { query: { query: filters.q!, limit: PAGE, ...(filters.page ? { page: filters.page } : {}) } } }))
        : unwrap(client.GET("/v1/resources", { params: { query: listQuery(filters, PAGE) } })),
  });

  const setFilters = (next: ResourceFilters) => void navigate({ search: next });

  return (
    <div>
      <h1>Resources</h1>
      <CreateResource />
      <Section title="Find resources">
        <FilterForm filters={filters} onApply={setFilters} />
      </Section>
      <Section title={searching ? "Search results" : "Resources, newest first"}>
        <ScopeNote reason={readReason} />
        {page.isPending && readReason === null && <Loading what="resources" />}
        <ErrorNotice error={page.error} />
        {page.data && (
          <>
            <table className="table">
              <caption className="sr-only">Resources</caption>
              <thead>
                <tr>
                  <th scope="col">Id</th>
                  <th scope="col">Name</th>
                  <th scope="col">Status</th>
                  <th scope="col">Metadata</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {page.data.data.map((r) => (
                  <tr key={r.id}>
                    <td>
                      <IdLink id={r.id} />
                    </td>
                    <td>{r.name}</td>
                    <td>
                      <StatusBadge status={r.status} />
                    </td>
                    <td className="meta">
                      {Object.entries(r.metadata)
                        .map(([k, v]) => `${k}=${v}`)
                        .join(", ")}
                    </td>
                    <td className="when">{formatTime(r.created)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            {page.data.data.length === 0 && (
              <p className="empty">{searching ? "No match on this page." : isFiltered(filters) ? "No resource matches these filters." : "No resources yet."}</p>
            )}
            <Pager filters={filters} page={page.data} searching={searching} onGo={setFilters} />
          </>
        )}
      </Section>
    </div>
  );
}

function Pager({ filters, page, searching, onGo }: { filters: ResourceFilters; page: Page; searching: boolean; onGo: (f: ResourceFilters) => void }) {
  const base = firstPage(filters);
  const first = page.data[0]?.id;
  const last = page.data.at(-1)?.id;
  const atStart = !filters.after && !filters.before && !filters.page;
  const hasOlder = searching ? page.has_more && !!page.next_page : filters.before ? true : page.has_more;
  const hasNewer = !searching && !atStart && (filters.after ? true : page.has_more);
  return (
    <nav className="pager" aria-label="Pages">
      <button type="button" disabled={atStart} onClick={() => onGo(base)}>
        First page
      </button>
      {!searching && (
        <button type="button" disabled={!hasNewer || !first} onClick={() => onGo({ ...base, before: first! })}>
          Newer
        </button>
      )}
      <button type="button" disabled={!hasOlder || (!searching && !last)} onClick={() => onGo(searching ? { ...base, page: page.next_page! } : { ...base, after: last! })}>
        {searching ? "More results" : "Older"}
      </button>
    </nav>
  );
}

function FilterForm({ filters, onApply }: { filters: ResourceFilters; onApply: (f: ResourceFilters) => void }) {
  const [draft, setDraft] = useState<ResourceFilters>(firstPage(filters));
  const [query, setQuery] = useState(filters.q ?? "");
  const set = (key: keyof ResourceFilters, value: string) => setDraft((d) => ({ ...d, [key]: value === "" ? undefined : value }));
  const apply = (event: FormEvent) => {
    event.preventDefault();
    const { q: _q, ...rest } = draft;
    onApply(Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined && v !== "")) as ResourceFilters);
  };
  const search = (event: FormEvent) => {
    event.preventDefault();
    onApply(query.trim() === "" ? {} : { q: query.trim() });
  };
  return (
    <div className="filters">
      <form onSubmit={apply} className="form form-inline" aria-label="Filter the list">
        <div className="field">
          <label htmlFor="f-status">Status</label>
          <select id="f-status" value={draft.status ?? ""} onChange={(e) => set("status", e.target.value)}>
            <option value="">Any</option>
            {RESOURCE_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="f-from">Created from (UTC)</label>
          <input id="f-from" type="date" value={draft.from ?? ""} onChange={(e) => set("from", e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="f-to">Created to (UTC)</label>
          <input id="f-to" type="date" value={draft.to ?? ""} onChange={(e) => set("to", e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="f-mkey">Metadata key</label>
          <input id="f-mkey" value={draft.metaKey ?? ""} onChange={(e) => set("metaKey", e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="f-mvalue">Metadata value</label>
          <input id="f-mvalue" value={draft.metaValue ?? ""} onChange={(e) => set("metaValue", e.target.value)} />
        </div>
        <div className="field field-wide">
          <label htmlFor="f-ids">Ids (up to 100, space-separated)</label>
          <input id="f-ids" value={draft.ids ?? ""} onChange={(e) => set("ids", e.target.value)} />
        </div>
        <div className="actions">
          <button type="submit">Apply filters</button>
          <button
            type="button"
            className="secondary"
            onClick={() => {
              setDraft({});
              onApply({});
            }}
          >
            Clear
          </button>
        </div>
      </form>
      <form onSubmit={search} className="form form-inline" aria-label="Search">
        <div className="field field-wide">
          <label htmlFor="f-query">Search query</label>
          <input id="f-query" value={query} placeholder={`name~'sta' AND status:'active'`} onChange={(e) => setQuery(e.target.value)} aria-describedby="f-query-help" />
          <p id="f-query-help" className="help">
            Clauses joined by AND (or OR on one field): <code>status:'active'</code>, <code>name~'pre'</code> (a prefix), <code>metadata['plan']:'pro'</code>,{" "}
            <code>created&gt;=1700000000</code>.
          </p>
        </div>
        <div className="actions">
          <button type="submit">Search</button>
          <button type="button" className="secondary" onClick={() => setQuery(searchQueryOf(draft))}>
            Use the filters as a query
          </button>
        </div>
      </form>
    </div>
  );
}

function CreateResource() {
  const { client } = useAuth();
  const reason = useScopeReason("resources:write");
  const queryClient = useQueryClient();
  const [name, setName] = useState("");
  const [status, setStatus] = useState<(typeof RESOURCE_STATUSES)[number]>("active");
  const [metadata, setMetadata] = useState("");
  const create = useMutation({
    mutationFn: () => unwrap(client.POST("/v1/resources", { body: { name, status, metadata: parseMetadataText(metadata) } })),
    onSuccess: () => {
      setName("");
      setMetadata("");
      void queryClient.invalidateQueries({ queryKey: ["resources"] });
    },
  });
  return (
    <Section title="Create a resource">
      <ScopeNote reason={reason} />
      <form
        className="form form-inline"
        aria-label="Create a resource"
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate();
        }}
      >
        <div className="field">
          <label htmlFor="c-name">Name</label>
          <input id="c-name" value={name} required maxLength={200} disabled={!!reason} onChange={(e) => setName(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="c-status">Status</label>
          <select id="c-status" value={status} disabled={!!reason} onChange={(e) => setStatus(e.target.value as typeof status)}>
            {RESOURCE_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <div className="field field-wide">
          <label htmlFor="c-metadata">Metadata (one key=value per line)</label>
          <textarea id="c-metadata" rows={2} value={metadata} disabled={!!reason} onChange={(e) => setMetadata(e.target.value)} />
        </div>
        <div className="actions">
          <button type="submit" disabled={!!reason || create.isPending}>
            Create resource
          </button>
        </div>
      </form>
      <ErrorNotice error={create.error} />
      {create.data && (
        <p className="notice notice-ok" role="status">
          Created <IdLink id={create.data.id} /> ({create.data.name}).{" "}
          <Link to="/resources/$id" params={{ id: create.data.id }}>
            Open it
          </Link>
        </p>
      )}
    </Section>
  );
}
