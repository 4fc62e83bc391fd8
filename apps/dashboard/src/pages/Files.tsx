import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { getRouteApi, Link, useNavigate } from "@tanstack/react-router";
import { ApiFailure, type Schemas, unwrap } from "../api/client";
import { useAuth } from "../app/auth";
import { ErrorNotice, NotAvailable } from "../components/ErrorNotice";
import { IdLink } from "../components/IdLink";
import { Json, Loading, Section } from "../components/ui";
import { formatBytes } from "../lib/progress";
import { formatTime } from "../lib/time";
import { DownloadButton } from "./JobDetail";

type Purpose = Schemas["File"]["purpose"];

const route = getRouteApi("/files");
const PURPOSES = ["resources_import", "resources_export", "job_results"] as const;

export function FilesPage() {
  const search = route.useSearch();
  const navigate = useNavigate({ from: "/files" });
  const auth = useAuth();
  const files = useQuery({
    queryKey: ["files", search],
    placeholderData: keepPreviousData,
    queryFn: () =>
      unwrap(
        auth.client.GET("/v1/files", {
          params: {
            query: {
              limit: 20,
              ...(search.purpose && (PURPOSES as readonly string[]).includes(search.purpose) ? { purpose: search.purpose as Purpose } : {}),
              ...(search.after ? { starting_after: search.after } : {}),
            },
          },
        }),
      ),
  });
  const missing = files.error instanceof ApiFailure && files.error.routeMissing ? files.error : null;
  const rows = files.data?.data ?? [];
  return (
    <div>
      <h1>Files</h1>
      {missing ? (
        <NotAvailable what="Files" error={missing} />
      ) : (
        <Section title="Files, newest first">
          <div className="form form-inline">
            <div className="field">
              <label htmlFor="fl-purpose">Purpose</label>
              <select id="fl-purpose" value={search.purpose ?? ""} onChange={(e) => void navigate({ search: { purpose: e.target.value || undefined } })}>
                <option value="">Any</option>
                {PURPOSES.map((p) => (
                  <option key={p} value={p}>
                    {p}
                  </option>
                ))}
              </select>
            </div>
          </div>
          {files.isPending && <Loading what="files" />}
          <ErrorNotice error={files.error} />
          {files.data && (
            <table className="table">
              <caption className="sr-only">Files</caption>
              <thead>
                <tr>
                  <th scope="col">File</th>
                  <th scope="col">Name</th>
                  <th scope="col">Purpose</th>
                  <th scope="col">Size</th>
                  <th scope="col">Created</th>
                  <th scope="col">Expires</th>
                  <th scope="col">Download</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((f) => (
                  <tr key={f.id}>
                    <td>
                      <IdLink id={f.id} />
                    </td>
                    <td>{f.filename ?? "—"}</td>
                    <td>{f.purpose}</td>
                    <td>{formatBytes(f.size)}</td>
                    <td className="when">{formatTime(f.created)}</td>
                    <td className="when">{formatTime(f.expires_at)}</td>
                    <td>
                      <DownloadButton fileId={f.id} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {files.data && rows.length === 0 && <p className="empty">No files.</p>}
          {files.data && (
            <nav className="pager" aria-label="Pages">
              <button type="button" disabled={!search.after} onClick={() => void navigate({ search: { purpose: search.purpose } })}>
                First page
              </button>
              <button type="button" disabled={!files.data.has_more || !rows.at(-1)} onClick={() => void navigate({ search: { ...search, after: rows.at(-1)!.id } })}>
                Older
              </button>
            </nav>
          )}
        </Section>
      )}
    </div>
  );
}

const fileRoute = getRouteApi("/files/$id");

export function FileDetailPage() {
  const { id } = fileRoute.useParams();
  const auth = useAuth();
  const file = useQuery({ queryKey: ["file", id], queryFn: () => unwrap(auth.client.GET("/v1/files/{id}", { params: { path: { id } } })) });
  const missing = file.error instanceof ApiFailure && file.error.routeMissing ? file.error : null;
  return (
    <div>
      <p className="crumbs">
        <Link to="/files">Files</Link> / <code>{id}</code>
      </p>
      <h1>{file.data?.filename ?? "File"}</h1>
      {missing ? <NotAvailable what="Files" error={missing} /> : <ErrorNotice error={file.error} />}
      {file.isPending && <Loading what="the file" />}
      {file.data && (
        <Section title="Details" actions={<DownloadButton fileId={id} />}>
          <Json value={file.data} label="The file as JSON" />
        </Section>
      )}
    </div>
  );
}
