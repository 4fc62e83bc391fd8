import { createHash } from "node:crypto";
import { eventually } from "@rms/test-db/testkit";
import { parse } from "csv-parse/sync";
import { expect, it } from "vitest";
import { useStackWithSecretKey, withSecretKey } from "../../testutil/harness.js";
import { finishedJob } from "../../testutil/jobs.js";

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies; each assertion states the shape it expects.
type Json = Record<string, any>;

// Files and jobs over HTTPS with a real worker beside the stack (CONTRACT.md section 11): upload a CSV, import it,
// download its results file; export, download, and check the rows and the sha256 against the file object.
const ctx = useStackWithSecretKey({ worker: true });

const sha256 = (text: string) => createHash("sha256").update(Buffer.from(text, "utf8")).digest("hex");

const finished = (id: string) => finishedJob(ctx, id, 60_000);

async function upload(text: string, filename: string): Promise<Json> {
  const form = new FormData();
  form.append("purpose", "resources_import");
  form.append("file", new Blob([text], { type: "text/csv" }), filename);
  const response = new Response(form);
  const body = Buffer.from(await response.arrayBuffer());
  const created = await ctx.stack.api.post("/v1/files", { key: ctx.key, body, headers: { "content-type": response.headers.get("content-type")! } });
  expect(created.status).toBe(201);
  return created.json as Json;
}

it("upload CSV -> import -> results file download: each row's outcome by line, errors with their line", async () => {
  const csv = 'name,status,metadata[team]\r\nalpha,active,core\r\n"beta, quoted",paused,\r\n,active,x\r\ngamma,archived,ops\r\n';
  const file = await upload(csv, "rows.csv");
  expect(file).toMatchObject({ purpose: "resources_import", type: "csv" });
  const created = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json: { type: "resources.import", params: { file: file.id } } });
  expect(created.status).toBe(201);
  expect(created.json.params).toEqual({ file: file.id });
  const job = await finished(created.json.id);
  expect(job).toMatchObject({ status: "succeeded", progress: { total: 4, processed: 4, failed: 1, skipped: 0 }, result: { created: 3 } });
  expect(job.result.errors).toEqual([{ index: 2, line: 4, id: null, code: "parameter_missing", param: "name", message: expect.any(String) }]);
  const results = await ctx.stack.api.get(`/v1/files/${job.result.results_file}`, { key: ctx.key });
  // Named after its job, so a download says which job's results it holds.
  expect(results.json).toMatchObject({ purpose: "job_results", type: "jsonl", filename: `${job.id}_results.jsonl` });
  const download = await ctx.stack.api.get(`/v1/files/${job.result.results_file}/contents`, { key: ctx.key });
  expect(download.status).toBe(200);
  expect(download.headers["content-disposition"]).toContain(`filename="${job.id}_results.jsonl"`);
  expect(sha256(download.text)).toBe(results.json.sha256);
  const lines = download.text
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
  expect(lines.map((l) => l.line)).toEqual([2, 3, 4, 5]);
  expect(lines[2]).toMatchObject({ line: 4, code: "parameter_missing", param: "name" });
  const resources = (await ctx.stack.api.get("/v1/resources?limit=100", { key: ctx.key })).json.data as Json[];
  for (const line of [lines[0], lines[1], lines[3]]) expect(resources.map((r) => r.id)).toContain(line.id);
  expect(resources.find((r) => r.id === lines[1].id)).toMatchObject({ name: "beta, quoted", status: "paused", metadata: {} });
});

it("a bad file param is 400 before anything is queued: no such file, another account's, the wrong purpose", async () => {
  const missing = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json: { type: "resources.import", params: { file: "file_0000000000000000000000" } } });
  expect(missing.status).toBe(400);
  expect(missing.json.error).toMatchObject({ code: "parameter_invalid", param: "params[file]" });
  const file = await upload("name\r\nx\r\n", "other.csv");
  const { key: otherKey } = await withSecretKey(ctx.stack);
  const foreign = await ctx.stack.api.post("/v1/jobs", { key: otherKey, json: { type: "resources.import", params: { file: file.id } } });
  expect(foreign.status).toBe(400);
  expect(foreign.json.error).toMatchObject({ code: "parameter_invalid", param: "params[file]" });
  // A results file is not an import's input.
  const job = await finished((await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json: { type: "resources.import", params: { file: file.id } } })).json.id);
  const wrong = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json: { type: "resources.import", params: { file: job.result.results_file } } });
  expect(wrong.status).toBe(400);
  expect(wrong.json.error).toMatchObject({ code: "parameter_invalid", param: "params[file]" });
});

it("export (JSONL and CSV) -> download: every resource once, and the bytes hash to the file's sha256", async () => {
  const { key: own } = await withSecretKey(ctx.stack);
  const ids: string[] = [];
  for (let i = 0; i < 25; i++)
    ids.push(
      (await ctx.stack.api.post("/v1/resources", { key: own, json: { name: i === 3 ? 'a "quoted", name' : `x${i}`, metadata: { i: String(i) } } })).json.id,
    );
  for (const format of ["jsonl", "csv"] as const) {
    const created = await ctx.stack.api.post("/v1/jobs", { key: own, json: { type: "resources.export", params: { format } } });
    expect(created.status).toBe(201);
    expect(created.json.params).toEqual({ filter: {}, format });
    const job = (await eventually(
      async () => {
        const j = (await ctx.stack.api.get(`/v1/jobs/${created.json.id}`, { key: own })).json as Json;
        expect(j.status).toBe("succeeded");
        return j;
      },
      { timeoutMs: 60_000 },
    )) as Json;
    expect(job.result).toMatchObject({ exported: 25, file: expect.stringMatching(/^file_/) });
    const file = (await ctx.stack.api.get(`/v1/files/${job.result.file}`, { key: own })).json as Json;
    expect(file).toMatchObject({ purpose: "resources_export", type: format, filename: `resources_export_${job.id}.${format}` });
    const download = await ctx.stack.api.get(`/v1/files/${file.id}/contents`, { key: own });
    expect(download.status).toBe(200);
    expect(Buffer.byteLength(download.text)).toBe(file.size);
    expect(sha256(download.text)).toBe(file.sha256);
    const rows: Json[] =
      format === "jsonl"
        ? download.text
            .trim()
            .split("\n")
            .map((l) => JSON.parse(l))
        : (parse(download.text, { columns: true }) as Json[]).map((r) => ({ ...r, metadata: JSON.parse(r.metadata) }));
    expect(rows.map((r) => r.id)).toEqual([...ids].sort());
    expect(rows.find((r) => r.id === ids[3])).toMatchObject({ name: 'a "quoted", name', metadata: { i: "3" } });
  }
});
