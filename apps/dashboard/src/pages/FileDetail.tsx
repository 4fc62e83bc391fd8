import { useQuery } from "@tanstack/react-query";
import { getRouteApi, Link } from "@tanstack/react-router";
import { ApiFailure, unwrap } from "../api/client";
import { useAuth } from "../app/auth";
import { PageHeader } from "../components/Disclosure";
import { DownloadButton } from "../components/DownloadButton";
import { ErrorNotice, NotAvailable } from "../components/ErrorNotice";
import { JsonView } from "../components/JsonView";
import { Loading, Section } from "../components/ui";
import { fileLabel } from "../lib/file-label";
import { usePageTitle } from "../lib/title";

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
