import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { OPERATIONS } from "./app.js";
import { openApiDocument } from "./openapi.js";

const run = promisify(execFile);
const redocly = createRequire(import.meta.url).resolve("@redocly/cli/bin/cli.js");

/** What `redocly lint --format=json` reports, reduced to what a failure message needs. */
interface LintProblem {
  ruleId: string;
  severity: "error" | "warn";
  message: string;
  location?: { pointer?: string }[];
}

it("passes `redocly lint` with the recommended rules: 0 errors, 0 warnings (offline, on the generated document)", async () => {
  const dir = await mkdtemp(join(tmpdir(), "rms-openapi-"));
  try {
    const file = join(dir, "openapi.json");
    await writeFile(file, JSON.stringify(openApiDocument(OPERATIONS), null, 2));
    // A config file next to the document: the recommended rules, nothing fetched from anywhere.
    await writeFile(join(dir, "redocly.yaml"), "extends:\n  - recommended\n");
    const { stdout } = await run(process.execPath, [redocly, "lint", file, "--config", join(dir, "redocly.yaml"), "--format=json"], {
      cwd: dir,
      env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", CI: "true" },
      timeout: 60_000,
    }).catch((error: { stdout?: string; stderr?: string }) => ({ stdout: error.stdout ?? "", stderr: error.stderr ?? "" }));
    const report = JSON.parse(stdout) as { problems: LintProblem[] };
    const problems = report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location?.[0]?.pointer ?? "?"}: ${p.message}`);
    expect(problems).toEqual([]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

it("names no real host in any example: every URL with a host is under the reserved `.invalid` name (RFC 2606)", () => {
  const text = JSON.stringify(openApiDocument(OPERATIONS));
  // A client or fuzzer sending an example as it is must reach no one: a webhook endpoint made from an example
  // delivers the account's events to its url.
  const hosts = [...text.matchAll(/[a-z][a-z0-9+.-]*:\/\/([^/"'`\\\s:?#)]+)/gi)].map((m) => m[1]!.toLowerCase());
  expect(hosts.filter((host) => host !== "<host>" && !host.endsWith(".invalid"))).toEqual([]);
  expect(hosts.length).toBeGreaterThan(0);
});

it("describes a stream's answer as one Server-Sent Event (id, event, data: the object's JSON), as OpenAPI 3.1 tools read it", () => {
  const paths = (
    openApiDocument(OPERATIONS) as { paths: Record<string, Record<string, { responses?: Record<string, { content?: Record<string, { schema?: unknown }> }> }>> }
  ).paths;
  const streams = Object.entries(paths).flatMap(([path, item]) =>
    Object.values(item).flatMap((operation) => {
      const schema = operation.responses?.["200"]?.content?.["text/event-stream"]?.schema;
      return schema ? [[path, schema] as const] : [];
    }),
  );
  expect(streams.map(([path]) => path).sort()).toEqual(["/v1/events/stream", "/v1/request_logs/stream"]);
  const objects = { "/v1/events/stream": "Event", "/v1/request_logs/stream": "RequestLog" } as Record<string, string>;
  for (const [path, schema] of streams) {
    expect(schema, path).toMatchObject({
      type: "object",
      required: ["id", "event", "data"],
      properties: {
        id: { type: "string", pattern: expect.stringMatching(/^\^(evt|req)_/) },
        data: { type: "string", contentMediaType: "application/json", contentSchema: { $ref: `#/components/schemas/${objects[path]}` } },
      },
    });
  }
});
