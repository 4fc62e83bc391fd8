import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { getRouteApi, Link } from "@tanstack/react-router";
import { useState } from "react";
import { type Schemas, unwrap } from "../api/client";
import { useAuth } from "../app/auth";
import { ErrorNotice } from "../components/ErrorNotice";
import { IdLink } from "../components/IdLink";
import { Button, Json, Loading, ScopeNote, Section, StatusBadge, Time, useScopeReason } from "../components/ui";
import { downloadFile } from "../lib/download";
import { isFinished, progressView } from "../lib/progress";
import { type Column, DataTable } from "../components/DataTable";

const route = getRouteApi("/jobs/$id");

const ITEM_ERROR_COLUMNS: readonly Column<Schemas["JobItemError"]>[] = [
  { header: "Item", cell: (e) => e.index },
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
  const job = useQuery({
    queryKey: ["job", id],
    // Live while unfinished: once a second, only while the tab is visible (TanStack Query pauses hidden tabs).
    refetchInterval: (q) => (q.state.data && isFinished(q.state.data.status) ? false : 1_000),
    queryFn: () => unwrap(auth.client.jobs.retrieve(id)),
  });
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
  const named: [string, unknown][] = [
    ["input", params?.["file"]],
    ["export", result?.["file"]],
    ["results, one line per item", result?.["results_file"]],
  ];
  const files = named.filter((f): f is [string, string] => typeof f[1] === "string");
  return (
    <div>
      <p className="crumbs">
        <Link to="/jobs">Jobs</Link> / <code>{id}</code>
      </p>
      <h1>{data ? `${data.type} job` : "Job"}</h1>
      {job.isPending && <Loading what="the job" />}
      <ErrorNotice error={job.error} />
      {data && view && (
        <>
          <Section title="Progress">
            <p>
              <StatusBadge status={data.status} /> {data.cancel_requested_at && !finished && <span>cancel requested, stopping at the next checkpoint</span>}
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
              <ul>
                {files.map(([what, fileId]) => (
                  <li key={fileId}>
                    {what}: <IdLink id={fileId} /> <DownloadButton fileId={fileId} />
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
              <DataTable caption={`Errors of ${id}`} columns={ITEM_ERROR_COLUMNS} rows={errors.data.data} rowKey={(e) => `${e.index}-${e.code}`} />
            )}
          </Section>
          <Section title="The job as JSON">
            <Json value={data} label="The job's fields" />
          </Section>
        </>
      )}
    </div>
  );
}

export function DownloadButton({ fileId }: { fileId: string }) {
  const auth = useAuth();
  const reason = useScopeReason("files:read");
  const [error, setError] = useState<unknown>(null);
  return (
    <>
      <button type="button" disabled={!!reason} title={reason ?? undefined} onClick={() => void downloadFile(auth.client, fileId, fileId).then(() => setError(null), setError)}>
        Download
      </button>
      <ErrorNotice error={error} />
    </>
  );
}
