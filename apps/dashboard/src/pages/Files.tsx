import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { getRouteApi, Link, useNavigate } from "@tanstack/react-router";
import { ApiFailure, type Schemas, unwrap } from "../api/client";
import { useAuth } from "../app/auth";
import { ErrorNotice, NotAvailable } from "../components/ErrorNotice";
import { IdLink } from "../components/IdLink";
import type { Column } from "../components/DataTable";
import { cursorPager, type FilterSpec, ListPage } from "../components/ListPage";
import { PageHeader } from "../components/Disclosure";
import { JsonView } from "../components/JsonView";
import { Loading, Section, Time } from "../components/ui";
import { formatBytes, storageUse } from "../lib/progress";
import { usePageTitle } from "../lib/title";
import { DownloadButton } from "./JobDetail";

type Purpose = Schemas["File"]["purpose"];

const route = getRouteApi("/files");
const PURPOSES = ["resources_import", "resources_export", "job_results"] as const;

type StoredFile = Schemas["File"];

const FILE_FILTERS: FilterSpec = { apply: "change", idPrefix: "fl", fields: [{ name: "purpose", label: "Purpose", kind: "select", options: PURPOSES }] };

/** What a file holds, in words: its name, or what its purpose says it is. */
export function fileLabel(file: Pick<StoredFile, "id" | "filename" | "purpose">): string {
  if (file.filename) return file.filename;
  return file.purpose === "resources_export" ? `the export ${file.id}` : file.purpose === "job_results" ? `the results ${file.id}` : file.id;
}

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
          ...(search.purpose && (PURPOSES as readonly string[]).includes(search.purpose) ? { purpose: search.purpose as Purpose } : {}),
          ...(search.after ? { starting_after: search.after } : {}),
        }),
      ),
  });
  const missing = files.error instanceof ApiFailure && files.error.routeMissing ? files.error : null;
  const base = search.purpose ? { purpose: search.purpose } : {};
  // A core of before answers no quota (0): nothing to show.
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
            Files of every purpose until they expire, and the parts of uploads not yet completed, in this mode. Past the quota an upload is refused (<code>limit_exceeded</code>);
            deleting files makes room.
          </p>
        </Section>
      )}
    </ListPage>
  );
}

const fileRoute = getRouteApi("/files/$id");

export function FileDetailPage() {
  const { id } = fileRoute.useParams();
  const auth = useAuth();
  const file = useQuery({ queryKey: ["file", id], queryFn: () => unwrap(auth.client.files.retrieve(id)) });
  usePageTitle(id, file.data?.filename ?? "File");
  const missing = file.error instanceof ApiFailure && file.error.routeMissing ? file.error : null;
  return (
    <div>
      <PageHeader
        title={file.data?.filename ?? "File"}
        crumbs={
          <>
            <Link to="/files">Files</Link> / <code>{id}</code>
          </>
        }
      />
      {missing ? <NotAvailable what="Files" error={missing} /> : <ErrorNotice error={file.error} />}
      {file.isPending && <Loading what="the file" />}
      {file.data && (
        <Section title="Details" actions={<DownloadButton fileId={id} label={`Download ${fileLabel(file.data)}`} />}>
          <JsonView value={file.data} label="The file as JSON" />
        </Section>
      )}
    </div>
  );
}
