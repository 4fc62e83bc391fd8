import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { getRouteApi, Link, useNavigate } from "@tanstack/react-router";
import { useState } from "react";
import { type Resource, unwrap } from "../api/client";
import { useAuth } from "../app/auth";
import { useDisclosure } from "../components/Disclosure";
import { ErrorNotice } from "../components/ErrorNotice";
import { IdLink } from "../components/IdLink";
import type { Column } from "../components/DataTable";
import { cursorPager, type FilterSpec, ListPage, type PagerButton } from "../components/ListPage";
import { ActionForm, Button, Options, ScopeNote, Section, StatusBadge, Time, useScopeReason } from "../components/ui";
import { firstPage, isFiltered, listQuery, type ResourceFilters, searchQueryOf } from "../lib/filters";
import { RESOURCE_STATUSES } from "../vocabulary";
import { parseMetadataText } from "../lib/metadata";
import { emptySearchText, searchPage } from "../lib/search-walk";

const route = getRouteApi("/resources");
const PAGE = 20;

interface Page {
  readonly data: Resource[];
  readonly has_more: boolean;
  readonly next_page?: string | null;
  /** A search page: how many requests it took (searchPage). */
  readonly requests?: number;
}

export const RESOURCE_FILTERS = {
  apply: "submit",
  idPrefix: "f",
  section: "Find resources",
  formLabel: "Filter the list",
  submitLabel: "Apply filters",
  clearable: true,
  fields: [
    { name: "status", label: "Status", kind: "select", options: RESOURCE_STATUSES },
    { name: "from", label: "Created from (UTC)", kind: "date" },
    { name: "to", label: "Created to (UTC)", kind: "date" },
    { name: "metaKey", id: "f-mkey", label: "Metadata key" },
    { name: "metaValue", id: "f-mvalue", label: "Metadata value" },
    { name: "ids", label: "Ids (up to 100, space-separated)", wide: true },
  ],
} as const satisfies FilterSpec;

const RESOURCE_COLUMNS: readonly Column<Resource>[] = [
  { header: "Id", cell: (r) => <IdLink id={r.id} /> },
  { header: "Name", cell: (r) => r.name, className: "text" },
  { header: "Status", cell: (r) => <StatusBadge status={r.status} /> },
  {
    header: "Metadata",
    cell: (r) =>
      Object.entries(r.metadata)
        .map(([k, v]) => `${k}=${v}`)
        .join(", ") || "—",
    className: "text",
  },
  { header: "Created", cell: (r) => <Time seconds={r.created} />, className: "when" },
];

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
    queryFn: ({ signal }) =>
      searching
        ? searchPage((at) => unwrap(client.resources.search({ query: filters.q!, limit: PAGE, ...(at ? { page: at } : {}) }, { signal })), filters.page)
        : unwrap(client.resources.list(listQuery(filters, PAGE), { signal })),
  });

  const setFilters = (next: ResourceFilters) => void navigate({ search: next });
  const create = useDisclosure();
  const { q: _q, ...listFilters } = firstPage(filters);

  return (
    <ListPage
      title="Resources"
      actions={create.button("New resource")}
      filters={{ ...RESOURCE_FILTERS, after: (draft) => <SearchForm draft={draft as ResourceFilters} initial={filters.q ?? ""} onSearch={setFilters} /> }}
      values={listFilters}
      onFilter={(values) => setFilters(values as ResourceFilters)}
      list={{
        title: searching ? "Search results" : "Resources, newest first",
        caption: "Resources",
        what: "resources",
        reason: readReason,
        query: page,
        columns: RESOURCE_COLUMNS,
        empty: searching ? emptySearchText(page.data) : isFiltered(filters) ? "No resource matches these filters." : "No resources yet.",
        pager: (data) => pagerButtons(filters, data, searching, setFilters),
      }}
    >
      {create.body(<CreateResource />)}
    </ListPage>
  );
}

/** A search's pages go on by its `next_page` (one way only); a list's by cursor, both ways. */
function pagerButtons(filters: ResourceFilters, page: Page, searching: boolean, onGo: (f: ResourceFilters) => void): PagerButton[] {
  const base = firstPage(filters);
  if (!searching) return cursorPager(filters, page, (cursor) => onGo({ ...base, ...cursor }), true);
  return [
    { label: "First page", disabled: !filters.after && !filters.before && !filters.page, go: () => onGo(base) },
    { label: "More results", disabled: !page.has_more || !page.next_page, go: () => onGo({ ...base, page: page.next_page! }) },
  ];
}

function SearchForm({ draft, initial, onSearch }: { draft: ResourceFilters; initial: string; onSearch: (f: ResourceFilters) => void }) {
  const [query, setQuery] = useState(initial);
  return (
    <ActionForm label="Search" onSubmit={() => onSearch(query.trim() === "" ? {} : { q: query.trim() })}>
      <div className="field field-wide">
        <label htmlFor="f-query">Search query</label>
        <input
          id="f-query"
          value={query}
          placeholder={`name~'sta' AND status:'active'`}
          onChange={(e) => setQuery(e.target.value)}
          aria-describedby="f-query-help"
        />
        <p id="f-query-help" className="help">
          Clauses joined by AND (OR on one field): <code>status:'active'</code>, <code>name~'pre'</code> (a prefix), <code>metadata['plan']:'pro'</code>,{" "}
          <code>created&gt;=1700000000</code>.
        </p>
      </div>
      <div className="actions">
        <button type="submit">Search</button>
        <button type="button" className="secondary" onClick={() => setQuery(searchQueryOf(draft))}>
          Use the filters as a query
        </button>
      </div>
    </ActionForm>
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
    mutationFn: () => unwrap(client.resources.create({ name, status, metadata: parseMetadataText(metadata) })),
    onSuccess: () => {
      setName("");
      setMetadata("");
      void queryClient.invalidateQueries({ queryKey: ["resources"] });
    },
  });
  return (
    <Section title="New resource">
      <ScopeNote reason={reason} />
      <ActionForm label="Create a resource" busy={create.isPending} onSubmit={() => create.mutate()}>
        <div className="field">
          <label htmlFor="c-name">Name</label>
          <input id="c-name" value={name} required maxLength={200} disabled={!!reason} onChange={(e) => setName(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="c-status">Status</label>
          <select id="c-status" value={status} disabled={!!reason} onChange={(e) => setStatus(e.target.value as typeof status)}>
            <Options values={RESOURCE_STATUSES} />
          </select>
        </div>
        <div className="field field-wide">
          <label htmlFor="c-metadata">Metadata (one key=value per line)</label>
          <textarea id="c-metadata" rows={2} value={metadata} disabled={!!reason} onChange={(e) => setMetadata(e.target.value)} />
        </div>
        <div className="actions">
          <Button type="submit" disabled={!!reason} busy={create.isPending}>
            Create resource
          </Button>
        </div>
      </ActionForm>
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
