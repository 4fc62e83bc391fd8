import { keepPreviousData, useMutation, useQueryClient } from "@tanstack/react-query";
import { getRouteApi, useNavigate } from "@tanstack/react-router";
import { type ChangeEvent, type Dispatch, type SetStateAction, useRef, useState } from "react";
import { type Job, unwrap } from "../api/client";
import type { Body } from "@rms/sdk";
import { useAuth } from "../app/auth";
import { ErrorNotice } from "../components/ErrorNotice";
import { IdLink } from "../components/IdLink";
import type { Column } from "../components/DataTable";
import { cursorPager, type FilterSpec, ListPage } from "../components/ListPage";
import { ActionForm, Button, Options, ScopeNote, Section, StatusBadge, Time, useScopeReason } from "../components/ui";
import { useDisclosure } from "../components/Disclosure";
import { uploadFile } from "../lib/upload";
import { useLiveQuery } from "../lib/live";
import { JOB_STATUSES, JOB_TYPES, RESOURCE_STATUSES, type ResourceStatus } from "../vocabulary";
import { INLINE_IMPORT_MAX, itemsOfFile } from "../lib/import-file";
import { parseMetadataText } from "../lib/metadata";
import { progressView, uploadLabel } from "../lib/progress";

const route = getRouteApi("/jobs");

export const JOB_FILTERS: FilterSpec = {
  apply: "change",
  idPrefix: "j",
  fields: [
    { name: "status", label: "Status", kind: "select", options: JOB_STATUSES },
    { name: "type", label: "Type", kind: "select", options: JOB_TYPES },
  ],
};

/** A job's status as the pages say it: a job that finished with failed rows says so, not a plain "succeeded". */
export function JobStatus({ job }: { job: Pick<Job, "status" | "progress"> }) {
  if (job.status === "succeeded" && job.progress.failed > 0) {
    return (
      <span className="badge badge-partial">
        succeeded with {job.progress.failed.toLocaleString("en-US")} error{job.progress.failed === 1 ? "" : "s"}
      </span>
    );
  }
  return <StatusBadge status={job.status} />;
}

const JOB_COLUMNS: readonly Column<Job>[] = [
  { header: "Job", cell: (j) => <IdLink id={j.id} /> },
  { header: "Type", cell: (j) => j.type },
  { header: "Status", cell: (j) => <JobStatus job={j} /> },
  { header: "Progress", cell: (j) => progressView(j).label },
  { header: "Created", cell: (j) => <Time seconds={j.created} />, className: "when" },
];

export function JobsPage() {
  const search = route.useSearch();
  const navigate = useNavigate({ from: "/jobs" });
  const { client } = useAuth();
  const reason = useScopeReason("jobs:read");
  const query = {
    limit: 20,
    ...(search.status ? { status: search.status as Job["status"] } : {}),
    ...(search.type ? { type: search.type as Job["type"] } : {}),
    ...(search.after ? { starting_after: search.after } : search.before ? { ending_before: search.before } : {}),
  };
  // The first page follows new jobs (one started elsewhere appears) and the progress of running ones; an older page
  // follows only while one of its jobs runs.
  const first = !search.after && !search.before;
  const jobs = useLiveQuery(first ? "jobs" : "job", {
    queryKey: ["jobs", search],
    enabled: reason === null,
    placeholderData: keepPreviousData,
    live: (data) => first || (data?.data.some((j) => j.status === "queued" || j.status === "running") ?? false),
    queryFn: () => unwrap(client.jobs.list(query)),
  });
  const bulk = useDisclosure();
  const importing = useDisclosure();
  const exporting = useDisclosure();
  const base = { ...(search.status ? { status: search.status } : {}), ...(search.type ? { type: search.type } : {}) };
  return (
    <ListPage
      title="Jobs"
      actions={
        <>
          {bulk.button("Bulk update or delete")}
          {importing.button("Import")}
          {exporting.button("Export")}
        </>
      }
      filters={JOB_FILTERS}
      values={base}
      onFilter={(values) => void navigate({ search: values })}
      list={{
        title: "Jobs, newest first",
        caption: "Jobs",
        what: "jobs",
        reason,
        query: jobs,
        columns: JOB_COLUMNS,
        empty: "No jobs.",
        pager: (page) => cursorPager(search, page, (cursor) => void navigate({ search: { ...base, ...cursor } }), false),
      }}
    >
      {bulk.body(<BulkJob />)}
      {importing.body(<ImportJob />)}
      {exporting.body(<ExportJob />)}
    </ListPage>
  );
}

type BulkType = "resources.bulk_update" | "resources.bulk_delete";
type JobCreate = Omit<Body<"createJob">, "validate_only">;

/** Bulk update or delete: the filter, a preview (`validate_only`: how many match, the first ids), then confirm. */
function BulkJob() {
  const { client } = useAuth();
  const reason = useScopeReason("jobs:write");
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [type, setType] = useState<BulkType>("resources.bulk_update");
  const [status, setStatus] = useState<ResourceStatus | "">("");
  const [metaKey, setMetaKey] = useState("");
  const [metaValue, setMetaValue] = useState("");
  const [newStatus, setNewStatus] = useState<ResourceStatus | "">("paused");
  const [newMetadata, setNewMetadata] = useState("");
  const filter = { ...(status ? { status } : {}), ...(metaKey ? { metadata: { [metaKey]: metaValue } } : {}) };
  const update = { ...(newStatus ? { status: newStatus } : {}), ...(newMetadata.trim() ? { metadata: parseMetadataText(newMetadata) } : {}) };
  const body = () => (type === "resources.bulk_delete" ? { type, params: { filter } } : { type, params: { filter, update } }) as JobCreate;
  const preview = useMutation({ mutationFn: () => unwrap(client.jobs.create({ ...body(), validate_only: true })) });
  const create = useMutation({
    mutationFn: () => unwrap(client.jobs.create(body())),
    onSuccess: (job) => {
      void queryClient.invalidateQueries({ queryKey: ["jobs"] });
      void navigate({ to: "/jobs/$id", params: { id: job.id } });
    },
  });
  const reset = () => preview.reset();
  const previewButton = useRef<HTMLButtonElement>(null);
  /** Cancel (or Escape in the preview) drops it and gives the focus back to Preview, which the keyboard came from. */
  const cancel = () => {
    reset();
    previewButton.current?.focus();
  };
  /** A change to the filter or the update drops the preview: it would not say what the job does. */
  const edit =
    <T extends string>(set: Dispatch<SetStateAction<T>>) =>
    (e: ChangeEvent<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>) => {
      set(e.target.value as T);
      reset();
    };
  return (
    <Section title="Bulk update or delete">
      <ScopeNote reason={reason} />
      <ActionForm label="Bulk update or delete" busy={preview.isPending} onSubmit={() => preview.mutate()}>
        <div className="field">
          <label htmlFor="b-type">Job</label>
          <select id="b-type" value={type} disabled={!!reason} onChange={edit(setType)}>
            <option value="resources.bulk_update">Update matching resources</option>
            <option value="resources.bulk_delete">Delete matching resources</option>
          </select>
        </div>
        <div className="field">
          <label htmlFor="b-status">Where status is</label>
          <select id="b-status" value={status} disabled={!!reason} onChange={edit(setStatus)}>
            <option value="">any</option>
            <Options values={RESOURCE_STATUSES} />
          </select>
        </div>
        <div className="field">
          <label htmlFor="b-mkey">and metadata key</label>
          <input id="b-mkey" value={metaKey} disabled={!!reason} onChange={edit(setMetaKey)} />
        </div>
        <div className="field">
          <label htmlFor="b-mvalue">equals</label>
          <input id="b-mvalue" value={metaValue} disabled={!!reason} onChange={edit(setMetaValue)} />
        </div>
        {type === "resources.bulk_update" && (
          <>
            <div className="field">
              <label htmlFor="b-newstatus">Set status to</label>
              <select id="b-newstatus" value={newStatus} disabled={!!reason} onChange={edit(setNewStatus)}>
                <option value="">(unchanged)</option>
                <Options values={RESOURCE_STATUSES} />
              </select>
            </div>
            <div className="field field-wide">
              <label htmlFor="b-newmeta">Merge metadata (key=value per line; key= removes)</label>
              <textarea id="b-newmeta" rows={2} value={newMetadata} disabled={!!reason} onChange={edit(setNewMetadata)} />
            </div>
          </>
        )}
        <div className="actions">
          <Button ref={previewButton} type="submit" disabled={!!reason} busy={preview.isPending}>
            Preview
          </Button>
        </div>
      </ActionForm>
      <ErrorNotice error={preview.error ?? create.error} />
      {preview.data && (
        <div
          className="preview"
          role="status"
          onKeyDown={(e) => {
            if (e.key !== "Escape") return;
            e.preventDefault();
            cancel();
          }}
        >
          <p>
            <strong>{preview.data.total.toLocaleString("en-US")}</strong> resource{preview.data.total === 1 ? " matches" : "s match"} now and would be{" "}
            {type === "resources.bulk_delete" ? "deleted" : "updated"}.
          </p>
          {preview.data.sample.length > 0 && (
            <p>
              First of them:{" "}
              {preview.data.sample.map((id, i) => (
                <span key={id}>
                  {i > 0 && ", "}
                  <IdLink id={id} />
                </span>
              ))}
            </p>
          )}
          <div className="actions">
            <Button className={type === "resources.bulk_delete" ? "danger" : ""} busy={create.isPending} onClick={() => create.mutate()}>
              Confirm: {type === "resources.bulk_delete" ? "delete" : "update"} {preview.data.total.toLocaleString("en-US")}
            </Button>
            <button type="button" className="secondary" onClick={cancel}>
              Cancel
            </button>
          </div>
        </div>
      )}
    </Section>
  );
}

/** Import: upload a CSV or JSONL file (the files API, with the upload's progress), or read it here and send its rows. */
function ImportJob() {
  const auth = useAuth();
  const reason = useScopeReason("jobs:write");
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [file, setFile] = useState<File | null>(null);
  const [sent, setSent] = useState<{ sent: number; total: number } | null>(null);
  const filesApi = auth.can("files:write");
  const start = useMutation({
    mutationFn: async (): Promise<Job> => {
      if (!file) throw new Error("Choose a file first.");
      if (filesApi) {
        const uploaded = await uploadFile(auth.client, file, (s, t) => setSent({ sent: s, total: t }));
        return unwrap(auth.client.jobs.create({ type: "resources.import", params: { file: uploaded.id } }));
      }
      const items = await itemsOfFile(file.name, await file.text());
      if (items.length > INLINE_IMPORT_MAX)
        throw new Error(
          `This server has no files API: an import sent from the browser takes at most ${INLINE_IMPORT_MAX.toLocaleString("en-US")} rows, this file ` +
            `has ${items.length.toLocaleString("en-US")}.`,
        );
      setSent({ sent: file.size, total: file.size });
      return unwrap(auth.client.jobs.create({ type: "resources.import", params: { items: items as { name: string }[] } }));
    },
    onSuccess: (job) => {
      void queryClient.invalidateQueries({ queryKey: ["jobs"] });
      void navigate({ to: "/jobs/$id", params: { id: job.id } });
    },
  });
  return (
    <Section title="Import resources from a file">
      <ScopeNote reason={reason} />
      <p className="help">
        CSV with a header row (<code>name</code>, optionally <code>status</code> and <code>metadata[key]</code> columns) or JSONL (one{" "}
        <code>{'{"name": ...}'}</code> per line).{" "}
        {filesApi
          ? "The file is uploaded to the files API, then imported."
          : `This server has no files API, so the rows are read here and sent with the job (at most ${INLINE_IMPORT_MAX.toLocaleString("en-US")}).`}
      </p>
      <ActionForm
        label="Import resources from a file"
        onSubmit={() => {
          setSent(null);
          start.mutate();
        }}
      >
        <div className="field field-wide">
          <label htmlFor="i-file">File (.csv, .jsonl)</label>
          <input
            id="i-file"
            type="file"
            accept=".csv,.jsonl,.ndjson,text/csv,application/x-ndjson"
            disabled={!!reason}
            onChange={(e) => setFile(e.target.files?.[0] ?? null)}
          />
        </div>
        <div className="actions">
          <Button type="submit" disabled={!!reason || !file} busy={start.isPending}>
            Upload and import
          </Button>
        </div>
      </ActionForm>
      {sent && (
        <div className="progress-line">
          <progress max={Math.max(sent.total, 1)} value={sent.sent} aria-label="Upload progress" />
          <span role="status">{uploadLabel(sent.sent, sent.total)}</span>
        </div>
      )}
      <ErrorNotice error={start.error} />
    </Section>
  );
}

/** Export: a `resources.export` job writes a file to download (needs the files API). */
function ExportJob() {
  const auth = useAuth();
  const navigate = useNavigate();
  const [format, setFormat] = useState<"jsonl" | "csv">("jsonl");
  const available = auth.can("files:read");
  const reason = useScopeReason("jobs:write");
  const start = useMutation({
    mutationFn: () => unwrap(auth.client.jobs.create({ type: "resources.export", params: { format } })),
    onSuccess: (job) => void navigate({ to: "/jobs/$id", params: { id: job.id } }),
  });
  return (
    <Section title="Export every resource to a file">
      {!available ? (
        <p className="scope-note">Export writes a file: not available with this key or on this server (no files API, or no files:read scope).</p>
      ) : (
        <>
          <ScopeNote reason={reason} />
          <ActionForm label="Export resources" busy={start.isPending} onSubmit={() => start.mutate()}>
            <div className="field">
              <label htmlFor="x-format">Format</label>
              <select id="x-format" value={format} onChange={(e) => setFormat(e.target.value as "jsonl" | "csv")}>
                <option value="jsonl">JSONL</option>
                <option value="csv">CSV</option>
              </select>
            </div>
            <div className="actions">
              <Button type="submit" disabled={!!reason} busy={start.isPending}>
                Start export
              </Button>
            </div>
          </ActionForm>
          <ErrorNotice error={start.error} />
        </>
      )}
    </Section>
  );
}
