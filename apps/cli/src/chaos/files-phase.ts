// The files phase of `npm run chaos` (CONTRACT.md section 11): in a fresh account, an import of CHAOS_FILE_ROWS rows
// (200,000 by default) from an uploaded JSONL file, then an export of the resources it made, through the public
// API, while the stack's worker processes are SIGKILLed at random and every worker once midway through each job.
// Then counted through the API: every row created once (the resources list), the results file one line per row,
// the export file every resource once and its bytes hashing to the file's sha256.
import { createHash } from "node:crypto";
import { httpsCall } from "../stack/processes.js";
import { newTestKey } from "../stack/processes.js";
import { PublicApi } from "../stack/public-api.js";
import { log, sleep } from "./log.js";
import { anyOf, startKiller, type ChaosStack } from "./stack.js";

const JOB_DEADLINE_MS = 20 * 60_000;
const PROGRESS_EVERY_MS = 30_000;

interface JobView {
  id: string;
  type: string;
  created: number;
  status: string;
  attempts: number;
  progress: { total: number | null; processed: number; failed: number };
  result: { created?: number; exported?: number; results_file?: string | null; file?: string | null } | null;
}

/** What the files phase counts: every count but `expected` must be 0 where it says so. */
export interface FilesPhaseCounts {
  rows_expected: number;
  import_status: string;
  import_attempts: number;
  resources_created: number;
  resources_duplicated: number;
  resources_missing: number;
  results_lines: number;
  results_lines_duplicated: number;
  results_lines_missing: number;
  export_status: string;
  export_attempts: number;
  rows_exported: number;
  rows_exported_duplicated: number;
  rows_exported_missing: number;
  export_sha256_matches: boolean;
  worker_kills: number;
  seconds: number;
  ok: boolean;
}

export async function runFilesPhase(stack: ChaosStack, rows: number): Promise<FilesPhaseCounts> {
  const started = Date.now();
  const tag = `files-${Date.now()}`;
  let key: Awaited<ReturnType<typeof newTestKey>> | undefined;
  for (let tries = 0; !key; tries++)
    key = await newTestKey(stack.coreAddr).catch((error: unknown) => (tries < 100 ? sleep(500).then(() => undefined) : Promise.reject(error)));
  const api = new PublicApi(stack.dir, stack.gatewayPort, key.secret);
  const workers = stack.workerNames;
  const killer = startKiller(stack, 3_000, 7_000, () => (Math.random() < 0.5 ? [...workers] : anyOf(workers)));
  let midwayKills = 0;

  /** Every worker SIGKILLed once the job has committed its first rows (and is not done yet). */
  const killMidway = async (id: string) => {
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      const job = await api.send<JobView>("GET", `/v1/jobs/${id}`);
      if (["succeeded", "failed", "canceled"].includes(job.status)) return;
      if (job.progress.processed > 0) {
        for (const name of workers) if (stack.kill(name)) midwayKills++;
        return;
      }
      await sleep(50);
    }
  };
  const finished = async (id: string): Promise<JobView> => {
    const deadline = Date.now() + JOB_DEADLINE_MS;
    let shown = Date.now();
    for (;;) {
      const job = await api.send<JobView>("GET", `/v1/jobs/${id}`);
      if (["succeeded", "failed", "canceled"].includes(job.status) || Date.now() > deadline) return job;
      // A long job shows how far it is, so a run cut short still says where it stood.
      if (Date.now() - shown >= PROGRESS_EVERY_MS) {
        shown = Date.now();
        log(
          `files: ${job.type} ${job.status}, ${job.progress.processed} of ${job.progress.total ?? "?"} processed, attempts ${job.attempts}, worker ` +
            `kills ${killer.kills.worker + midwayKills}`,
        );
      }
      await sleep(500);
    }
  };

  log(
    `files: upload of a ${rows}-row JSONL file, its import, then an export of what it made; workers SIGKILLed every 3 to 7 s and every worker once ` +
      `midway through each job`,
  );
  const names = Array.from({ length: rows }, (_, i) => `${tag}-${i}`);
  const jsonl = names.map((name) => JSON.stringify({ name, metadata: { tag } })).join("\n");
  const file = await upload(api, jsonl, `${tag}.jsonl`, `${tag}-upload`);
  const importJob = await api.send<JobView>("POST", "/v1/jobs", { json: { type: "resources.import", params: { file } }, idempotencyKey: `${tag}-import` });
  await killMidway(importJob.id);
  const imported = await finished(importJob.id);
  log(`files: import ${imported.status} after ${((Date.now() - started) / 1000).toFixed(1)} s, attempts ${imported.attempts}`);
  const exportJob = await api.send<JobView>("POST", "/v1/jobs", {
    json: { type: "resources.export", params: { filter: { metadata: { tag } } } },
    idempotencyKey: `${tag}-export`,
  });
  await killMidway(exportJob.id);
  const exported = await finished(exportJob.id);
  const kills = await killer.stop();
  log(`files: export ${exported.status} after ${((Date.now() - started) / 1000).toFixed(1)} s, attempts ${exported.attempts}`);

  // The resources, through the list filtered by the tag (every page), by name.
  log("files: counting: the resources by the list filtered by the tag, then the results file, then the export");
  let shown = Date.now();
  const listed = await api.all<{ id: string; name: string }>("/v1/resources", `metadata[tag]=${tag}`, (count) => {
    if (Date.now() - shown < PROGRESS_EVERY_MS) return;
    shown = Date.now();
    log(`files: ${count} resources listed so far`);
  });
  log(`files: ${listed.length} resources listed`);
  const byName = tally(listed.map((r) => r.name));
  const expectedNames = new Set(names);
  // The results file: one line per row, line numbers 1..rows.
  const results = imported.result?.results_file ? (await download(api, imported.result.results_file)).text : "";
  const resultLines = tally(
    results
      .split("\n")
      .filter(Boolean)
      .map((l) => String((JSON.parse(l) as { line: number }).line)),
  );
  // The export: every listed resource once; its bytes hash to the file object's sha256.
  let exportIds = new Map<string, number>();
  let shaMatches = false;
  if (exported.result?.file) {
    const { text, sha256 } = await download(api, exported.result.file);
    exportIds = tally(
      text
        .split("\n")
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { id: string }).id),
    );
    shaMatches = createHash("sha256").update(text, "utf8").digest("hex") === sha256;
  }
  const listedIds = new Set(listed.map((r) => r.id));
  api.close();
  const counts: FilesPhaseCounts = {
    rows_expected: rows,
    import_status: imported.status,
    import_attempts: imported.attempts,
    resources_created: byName.size,
    resources_duplicated: [...byName.values()].filter((n) => n > 1).length,
    resources_missing: [...expectedNames].filter((n) => !byName.has(n)).length,
    results_lines: resultLines.size,
    results_lines_duplicated: [...resultLines.values()].filter((n) => n > 1).length,
    results_lines_missing: names.filter((_, i) => !resultLines.has(String(i + 1))).length,
    export_status: exported.status,
    export_attempts: exported.attempts,
    rows_exported: exportIds.size,
    rows_exported_duplicated: [...exportIds.values()].filter((n) => n > 1).length,
    rows_exported_missing: [...listedIds].filter((id) => !exportIds.has(id)).length,
    export_sha256_matches: shaMatches,
    worker_kills: kills.worker + midwayKills,
    seconds: Math.round((Date.now() - started) / 1000),
    ok: false,
  };
  counts.ok =
    counts.import_status === "succeeded" &&
    counts.export_status === "succeeded" &&
    counts.resources_created === rows &&
    counts.resources_duplicated + counts.resources_missing + counts.results_lines_duplicated + counts.results_lines_missing === 0 &&
    counts.results_lines === rows &&
    counts.rows_exported === rows &&
    counts.rows_exported_duplicated + counts.rows_exported_missing === 0 &&
    counts.export_sha256_matches;
  return counts;
}

function tally(values: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return counts;
}

/** `POST /v1/files` with a multipart body (as curl -F sends it), retried under its Idempotency-Key until the stack answers. */
async function upload(api: PublicApi, text: string, filename: string, idempotencyKey: string): Promise<string> {
  const boundary = `----rms-chaos-${Date.now()}`;
  const body =
    `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nresources_import\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: ` +
    `application/x-ndjson\r\n\r\n${text}\r\n--${boundary}--\r\n`;
  for (let tries = 0; ; tries++) {
    const reply = await httpsCall(api.dataDir, api.port, "POST", "/v1/files", {
      key: api.key,
      agent: api.agent,
      form: body,
      headers: { "content-type": `multipart/form-data; boundary=${boundary}`, "idempotency-key": idempotencyKey },
    }).catch(() => null);
    if (reply?.status === 201 || reply?.status === 200) return (JSON.parse(reply.body) as { id: string }).id;
    if (tries > 60) throw new Error(`upload: ${reply ? `${reply.status} ${reply.body.slice(0, 300)}` : "no answer"}`);
    await sleep(1_000);
  }
}

/** A file's object and its contents, retried until the stack answers. */
async function download(api: PublicApi, id: string): Promise<{ text: string; sha256: string }> {
  const { sha256 } = await api.send<{ sha256: string }>("GET", `/v1/files/${id}`);
  for (let tries = 0; ; tries++) {
    const reply = await httpsCall(api.dataDir, api.port, "GET", `/v1/files/${id}/contents`, { key: api.key, agent: api.agent }).catch(() => null);
    if (reply?.status === 200) return { text: reply.body, sha256 };
    if (tries > 60) throw new Error(`download ${id}: ${reply ? reply.status : "no answer"}`);
    await sleep(1_000);
  }
}
