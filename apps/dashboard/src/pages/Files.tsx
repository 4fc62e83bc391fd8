import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { getRouteApi, useNavigate } from "@tanstack/react-router";
import { ApiFailure, type Schemas, unwrap } from "../api/client";
import { useAuth } from "../app/auth";
import { NotAvailable } from "../components/ErrorNotice";
import { IdLink } from "../components/IdLink";
import type { Column } from "../components/DataTable";
import { cursorPager, type FilterSpec, ListPage } from "../components/ListPage";
import { Section, Time } from "../components/ui";
import { formatBytes, storageUse } from "../lib/progress";
import { fileLabel } from "../lib/file-label";
import { FILE_PURPOSES } from "../vocabulary";
import { DownloadButton } from "../components/DownloadButton";

type Purpose = Schemas["File"]["purpose"];

const route = getRouteApi("/files");

type StoredFile = Schemas["File"];

const FILE_FILTERS: FilterSpec = { apply: "change", idPrefix: "fl", fields: [{ name: "purpose", label: "Purpose", kind: "select", options: FILE_PURPOSES }] };

const FILE_COLUMNS: readonly Column<StoredFile>[] = [
  { header: "File", cell: (f) => <IdLink id={f.id} /> },
  { header: "Name", cell: (f) => f.filename ?? "—", className: "text" },
  { header: "Purpose", cell: (f) => f.purpose },
  { header: "Size", cell: (f) => formatBytes(f.size) },
  { header: "Created", cell: (f) => <Time seconds={f.created} />, className: "when" },
  { header: "Expires", cell: (f) => <Time seconds={f.expires_at} />, className: "when" },
  { header: "Download", cell: (f) => <DownloadButton fileId={f.id} label="Download" name={`Download ${fileLabel(f)}`} /> },
];

export function FilesPage() {
  const search = route.useSearch();
  const navigate = useNavigate({ from: "/files" });
  const auth = useAuth();
  const files = useQuery({
    queryKey: ["files", search],
    placeholderData: keepPreviousData,
    queryFn: () =>
      unwrap(
        auth.client.files.list({
          limit: 20,
          ...(search.purpose && (FILE_PURPOSES as readonly string[]).includes(search.purpose) ? { purpose: search.purpose as Purpose } : {}),
          ...(search.after ? { starting_after: search.after } : {}),
        }),
      ),
  });
  const missing = files.error instanceof ApiFailure && files.error.routeMissing ? files.error : null;
  const base = search.purpose ? { purpose: search.purpose } : {};
  // A server that keeps no quota answers 0: nothing to show.
  const usage = files.data && files.data.quota_bytes > 0 ? storageUse(files.data.used_bytes, files.data.quota_bytes) : null;
  return (
    <ListPage
      title="Files"
      unavailable={missing && <NotAvailable what="Files" error={missing} />}
      filters={FILE_FILTERS}
      values={base}
      onFilter={(values) => void navigate({ search: values })}
      list={{
        title: "Files, newest first",
        caption: "Files",
        what: "files",
        query: files,
        columns: FILE_COLUMNS,
        empty: "No files.",
        pager: (page) => cursorPager(search, page, (cursor) => void navigate({ search: { ...base, ...cursor } }), false),
      }}
    >
      {usage && (
        <Section title="Storage">
          <div className="progress-line">
            <progress aria-label="Storage used" max={100} value={usage.percent} />
            <span data-testid="storage-use">{usage.label}</span>
          </div>
          <p className="help">
            Files of every purpose until they expire, and the parts of uploads not yet completed, in this mode. Past the quota an upload is refused (
            <code>limit_exceeded</code>); deleting files makes room.
          </p>
        </Section>
      )}
    </ListPage>
  );
}
