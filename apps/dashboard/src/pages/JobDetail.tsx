import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { PageHeader } from "../components/Disclosure";
import { JsonView } from "../components/JsonView";
import { useLiveQuery } from "../lib/live";
import { usePageTitle } from "../lib/title";
import { JobStatus } from "./Jobs";
import { getRouteApi, Link } from "@tanstack/react-router";
import { type Schemas, unwrap } from "../api/client";
import { useAuth } from "../app/auth";
import { ErrorNotice } from "../components/ErrorNotice";
import { IdLink } from "../components/IdLink";
import { Button, Loading, ScopeNote, Section, Time, useScopeReason } from "../components/ui";
import { DownloadButton } from "../components/DownloadButton";
import { isFinished, progressView } from "../lib/progress";
import { type Column, DataTable } from "../components/DataTable";

const route = getRouteApi("/jobs/$id");

/** Where an item is: an import's row by its line in the file (1-based, the header counted), a bulk job's match by its number. */
export function itemPlace(error: Pick<Schemas["JobItemError"], "index"> & { readonly line?: number | undefined }): string {
  return error.line !== undefined ? `line ${error.line}` : `match ${error.index + 1}`;
}

const ITEM_ERROR_COLUMNS: readonly Column<Schemas["JobItemError"]>[] = [
  { header: "Where", cell: (e) => itemPlace(e) },
  { header: "Resource", cell: (e) => <IdLink id={e.id} /> },
  { header: "Code", cell: (e) => <code>{e.code}</code> },
  { header: "Parameter", cell: (e) => e.param ?? "—", className: "text" },
  { header: "Message", cell: (e) => e.message, className: "text" },
];

export function JobDetailPage() {
  const { id } = route.useParams();
  const auth = useAuth();
  const queryClient = useQueryClient();
  const writeReason = useScopeReason("jobs:write");
  const job = useLiveQuery("job", {
    queryKey: ["job", id],
    // Live while unfinished, only while the tab is visible.
    live: (data) => !(data && isFinished(data.status)),
    queryFn: () => unwrap(auth.client.jobs.retrieve(id)),
  });
  usePageTitle(id, job.data ? `${job.data.type} job` : "Job");
  const finished = job.data ? isFinished(job.data.status) : false;
  const errors = useQuery({
    queryKey: ["job-errors", id, finished],
    enabled: !!job.data && (job.data.progress.failed > 0 || finished),
    queryFn: () => unwrap(auth.client.jobs.listErrors(id, { limit: 100 })),
  });
  const cancel = useMutation({
    mutationFn: () => unwrap(auth.client.jobs.cancel(id)),
    onSuccess: (updated) => {
      queryClient.setQueryData(["job", id], updated);
      void queryClient.invalidateQueries({ queryKey: ["jobs"] });
    },
  });
  const data = job.data;
  const view = data ? progressView(data) : null;
  const result = (data?.result ?? null) as Record<string, unknown> | null;
  const params = (data?.params ?? null) as Record<string, unknown> | null;
  const format = typeof params?.["format"] === "string" ? ` (${String(params["format"]).toUpperCase()})` : "";
  const named: [string, string, unknown][] = [
    ["The file imported", "Download the imported file", params?.["file"]],
    ["The export", `Download the export${format}`, result?.["file"]],
    ["The results, one line per item", "Download the results", result?.["results_file"]],
  ];
  const files = named.filter((f): f is [string, string, string] => typeof f[2] === "string");
  return (
    <div>
      <PageHeader
        title={data ? `${data.type} job` : "Job"}
        crumbs={
          <>
            <Link to="/jobs">Jobs</Link> / <code>{id}</code>
          </>
        }
      />
      {job.isPending && <Loading what="the job" />}
      <ErrorNotice error={job.error} />
      {data && view && (
        <>
          <Section title="Progress">
            <p>
              <JobStatus job={data} /> {data.cancel_requested_at && !finished && <span>cancel requested, stopping at the next checkpoint</span>}
            </p>
            <div className="progress-line">
              {view.percent === null ? <progress aria-label="Job progress" /> : <progress aria-label="Job progress" max={100} value={view.percent} />}
              <span role="status" data-testid="job-progress">
                {view.label}
              </span>
            </div>
            <dl className="details">
              <dt>Created</dt>
              <dd>
                <Time seconds={data.created} />
              </dd>
              <dt>Started</dt>
              <dd>
                <Time seconds={data.started_at} />
              </dd>
              <dt>Finished</dt>
              <dd>
                <Time seconds={data.finished_at} />
              </dd>
              <dt>Attempts</dt>
              <dd>{data.attempts}</dd>
              {data.failure_code && (
                <>
                  <dt>Failure</dt>
                  <dd>
                    <code>{data.failure_code}</code> {data.failure_message}
                  </dd>
                </>
              )}
            </dl>
            {!finished && (
              <>
                <ScopeNote reason={writeReason} />
                <Button className="danger" disabled={!!writeReason} busy={cancel.isPending || !!data.cancel_requested_at} onClick={() => cancel.mutate()}>
                  {data.cancel_requested_at ? "Cancel requested" : "Cancel job"}
                </Button>
              </>
            )}
            <ErrorNotice error={cancel.error} />
          </Section>
          {files.length > 0 && (
            <Section title="Files">
              <ul className="plain-list">
                {files.map(([what, action, fileId]) => (
                  <li key={fileId}>
                    {what}: <IdLink id={fileId} /> <DownloadButton fileId={fileId} label={action} />
                  </li>
                ))}
              </ul>
            </Section>
          )}
          <Section title="Errors">
            {errors.data && errors.data.data.length === 0 && <p className="empty">No errors.</p>}
            {!errors.data && !errors.error && <p className="empty">None so far.</p>}
            <ErrorNotice error={errors.error} />
            {errors.data && errors.data.data.length > 0 && (
              <>
                <p className="help">
                  {data.type === "resources.import" ? "By the line of the file (the first line is 1; a CSV's header is line 1)." : "By match, in id order."}
                </p>
                <DataTable caption={`Errors of ${id}`} columns={ITEM_ERROR_COLUMNS} rows={errors.data.data} rowKey={(e) => `${e.index}-${e.code}`} />
              </>
            )}
          </Section>
          <Section title="The job as JSON">
            <JsonView value={data} label="The job's fields" openDepth={1} />
          </Section>
        </>
      )}
    </div>
  );
}
