// The writes of a release database, through the public API of a running stack (accounts and keys through the
// admin service, the one way to make them), and what they made: every kind of stored object, each in the states a
// deployment holds it in (resources created, updated, deleted, in both modes and two accounts; keys of every kind and
// scope, expired and revoked; webhook endpoints of both schemes, one with a rotated secret, one disabled, deliveries
// done and pending; events; uploaded files, one in parts, and an upload left pending; jobs that succeeded and one that
// failed, an import from a file, a bulk update and delete, exports; request logs; dashboard sessions). Written so
// that any release since 1.4.0 can run it: only what 1.4.0's API has. make-data.ts runs it on an earlier release's
// build; the packed-data test reads back what it records.
import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { request as httpRequest } from "node:http";
import { AdminService, KeyKind, bearerMetadata, createClient } from "@rms/proto";
import { type Api, multipartFile, sleep } from "./http.js";
import type { ManifestEndpoint, ManifestFile, ManifestKey, ManifestProbe, ManifestRead, ManifestReplay, ReleaseManifest } from "./manifest.js";

type Admin = ReturnType<typeof createClient<typeof AdminService>>;
type Obj = Record<string, unknown> & { id: string };

/** Every scope of 1.4.0, each given alone to a restricted key of its own. */
export const SCOPES = [
  "resources:read",
  "resources:write",
  "jobs:read",
  "jobs:write",
  "webhooks:write",
  "events:read",
  "files:read",
  "files:write",
  "request_logs:read",
] as const;

export interface WriteOptions {
  api: Api;
  coreAddr: string;
  adminToken: string;
  /** The gateway's plain-HTTP port (a key sent there is revoked). */
  httpPort: number;
  log: (line: string) => void;
}

export type WrittenData = Omit<ReleaseManifest, "release" | "commit" | "mongod" | "database" | "archive" | "settings">;

const sha256 = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("hex");
const enc = encodeURIComponent;

/** A receiver that answers every delivery 200 (the deliveries made while it runs succeed). */
async function startReceiver(): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.end("ok"));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, server };
}

/** A loopback url nothing listens on (a port taken and released): deliveries to it fail and stay pending. */
async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/hooks`;
}

export async function writeReleaseData(options: WriteOptions): Promise<WrittenData> {
  const { api, log } = options;
  const admin: Admin = createClient(AdminService, options.coreAddr, { metadata: bearerMetadata(options.adminToken), timeoutMs: 10_000 });
  const receiver = await startReceiver();
  try {
    return await write(options, api, admin, receiver.url, log);
  } finally {
    admin.close();
    await new Promise<void>((resolve) => receiver.server.close(() => resolve()));
  }
}

async function write(options: WriteOptions, api: Api, admin: Admin, receiverUrl: string, log: (line: string) => void): Promise<WrittenData> {
  const madeFrom = Math.floor(Date.now() / 1000);
  const keys: Record<string, ManifestKey> = {};
  const accounts: Record<string, string> = {};
  const files: Record<string, ManifestFile> = {};
  const endpoints: Record<string, ManifestEndpoint> = {};
  const replays: ManifestReplay[] = [];
  const requestIds: Record<string, string> = {};

  // Accounts and keys.
  for (const name of ["main", "other"]) accounts[name] = (await admin.createAccount({})).account!.id;
  const kinds = { secret: KeyKind.SECRET, publishable: KeyKind.PUBLISHABLE, restricted: KeyKind.RESTRICTED } as const;
  const makeKey = async (name: string, account: string, kind: keyof typeof kinds, livemode: boolean, scopes: string[] = [], expiresAt = 0) => {
    const made = await admin.createKey({ accountId: account, kind: kinds[kind], livemode, scopes, expiresAt: BigInt(expiresAt) });
    keys[name] = {
      id: made.key!.id,
      secret: made.secret,
      account,
      kind,
      livemode,
      scopes: [...made.key!.scopes],
      expires_at: expiresAt,
      revoked: false,
      state: "valid",
    };
    return made.secret;
  };
  const main = accounts["main"]!;
  const now = () => Math.floor(Date.now() / 1000);
  const sk = await makeKey("secret_test", main, "secret", false);
  const skLive = await makeKey("secret_live", main, "secret", true);
  await makeKey("publishable_test", main, "publishable", false);
  await makeKey("publishable_live", main, "publishable", true);
  for (const scope of SCOPES) await makeKey(`restricted_${scope.replace(":", "_")}`, main, "restricted", false, [scope]);
  await makeKey("restricted_read_events", main, "restricted", false, ["resources:read", "events:read"]);
  await makeKey("restricted_live_jobs", main, "restricted", true, ["jobs:write"]);
  await makeKey("publishable_far_expiry", main, "publishable", false, [], now() + 10 * 365 * 86_400);
  await makeKey("restricted_expiring", main, "restricted", false, ["resources:read"], now() + 3);
  await makeKey("secret_revoked", main, "secret", false);
  await admin.revokeKey({ keyId: keys["secret_revoked"]!.id, reason: "release data: a revoked key" });
  Object.assign(keys["secret_revoked"]!, { revoked: true, state: "api_key_revoked" });
  await makeKey("secret_sent_over_http", main, "secret", false);
  const skOther = await makeKey("secret_other_account", accounts["other"]!, "secret", false);
  log(`accounts ${Object.values(accounts).join(", ")}; ${Object.keys(keys).length} keys`);

  // A key sent over plain HTTP is revoked by the gateway.
  await new Promise<void>((resolve, reject) => {
    const req = httpRequest(
      { host: "127.0.0.1", port: options.httpPort, path: "/v1/resources", headers: { authorization: `Bearer ${keys["secret_sent_over_http"]!.secret}` } },
      (res) => {
        res.resume();
        res.on("end", resolve);
      },
    );
    req.on("error", reject);
    req.end();
  });
  for (let i = 0; (await api.call("GET", "/v1/resources?limit=1", { key: keys["secret_sent_over_http"]!.secret })).status !== 401; i++) {
    if (i > 100) throw new Error("the key sent over plain HTTP was not revoked");
    await sleep(200);
  }
  Object.assign(keys["secret_sent_over_http"]!, { revoked: true, state: "api_key_revoked" });

  // Webhook endpoints, before the writes whose events they take.
  const e1 = await api.ok<Obj & { secret: string }>("POST", "/v1/webhook_endpoints", {
    key: sk,
    form: `url=${enc(receiverUrl)}&enabled_events[]=*&description=${enc("every event")}&metadata[team]=ops`,
  });
  const e2 = await api.ok<Obj & { public_key: string }>("POST", "/v1/webhook_endpoints", {
    key: sk,
    form: `url=${enc(receiverUrl)}&enabled_events[]=resource.created&enabled_events[]=resource.updated&enabled_events[]=resource.deleted&signature_scheme=v1a`,
  });
  const e3 = await api.ok<Obj>("POST", "/v1/webhook_endpoints", {
    key: sk,
    form: `url=${enc(receiverUrl)}&enabled_events[]=job.succeeded&description=disabled`,
  });
  await api.ok("POST", `/v1/webhook_endpoints/${e3.id}`, { key: sk, form: "status=disabled" });
  endpoints["every_event"] = { id: e1.id, scheme: "v1", secrets: [e1.secret] };
  endpoints["resources_v1a"] = { id: e2.id, scheme: "v1a", secrets: [], public_key: e2.public_key };
  endpoints["disabled"] = { id: e3.id, scheme: "v1", secrets: [] };

  // Resources: names, statuses and metadata of every shape the contract allows.
  const created: Record<string, Obj> = {};
  const create = async (name: string, form: string, key = sk) => {
    created[name] = await api.ok<Obj>("POST", "/v1/resources", { key, form });
  };
  await create("alpha", "name=alpha%20one&metadata[plan]=pro&metadata[batch]=b1");
  await create("alpha_two", "name=Alpha%20two&status=paused&metadata[plan]=free&metadata[batch]=b1");
  await create("beta", `name=beta&status=archived&metadata[${enc("$where")}]=1&metadata[a.b]=dot&metadata[__proto__]=proto`);
  await create("spaced", `name=${enc("  spaced name  ")}`);
  await create("unicode", `name=${enc("ünïcødé ☃ 名前")}&metadata[lang]=de`);
  await create("longest", `name=${"n".repeat(200)}&metadata[${"k".repeat(40)}]=${"v".repeat(500)}`);
  for (let i = 1; i <= 6; i++) await create(`gamma_${i}`, `name=gamma-${i}&metadata[batch]=imp&metadata[i]=${i}`);
  for (let i = 1; i <= 3; i++) await create(`doomed_${i}`, `name=doomed-${i}&metadata[batch]=del`);
  // A keyed create, and a keyed update: their first answers are replayed after the upgrade.
  const keyed = async (path: string, form: string, idempotencyKey: string) => {
    const reply = await api.call("POST", path, { key: sk, form, idempotencyKey });
    replays.push({ key: "secret_test", path, form, idempotency_key: idempotencyKey, status: reply.status, body: reply.body });
    requestIds[idempotencyKey] = String(reply.headers["request-id"]);
    return reply;
  };
  created["keyed"] = JSON.parse((await keyed("/v1/resources", "name=keyed&metadata[source]=idempotent", "release-data-create")).body) as Obj;
  // Updates: status, metadata merge and removal, rename; two of them to one resource.
  const alpha = created["alpha"]!.id;
  await api.ok("POST", `/v1/resources/${alpha}`, { key: sk, form: "status=paused&metadata[plan]=enterprise" });
  await api.ok("POST", `/v1/resources/${alpha}`, { key: sk, form: "name=alpha%20renamed&metadata[batch]=" });
  await api.ok("POST", `/v1/resources/${created["beta"]!.id}`, { key: sk, form: "metadata=" });
  await keyed(`/v1/resources/${created["unicode"]!.id}`, "metadata[updated]=yes", "release-data-update");
  // Deletes.
  const deleted = created["spaced"]!.id;
  await api.ok("DELETE", `/v1/resources/${deleted}`, { key: sk });
  await keyed(`/v1/resources/${deleted}`, "name=too-late", "release-data-update-deleted");
  // The other mode and the other account.
  await create("live_one", "name=live%20one&metadata[mode]=live", skLive);
  await create("live_two", "name=live%20two&status=archived", skLive);
  await create("other_account", "name=other%20account", skOther);
  log(`${Object.keys(created).length} resources written`);

  // The first endpoint's secret rotated: the old one keeps signing for a day beside the new one.
  const rotated = await api.ok<{ secret: string }>("POST", `/v1/webhook_endpoints/${e1.id}/rotate_secret`, { key: sk, form: "expires_in=86400" });
  endpoints["every_event"]!.secrets = [rotated.secret, e1.secret];
  await api.ok("POST", `/v1/resources/${created["gamma_1"]!.id}`, { key: sk, form: "metadata[after_rotation]=yes" });

  // Files: an upload in one request, one in parts, one left pending; imports from them, a bulk update and delete,
  // exports, an inline import and an import that fails.
  const upload = async (name: string, filename: string, type: string, content: string) => {
    const body = multipartFile("resources_import", filename, type, content);
    const file = await api.ok<Obj & { sha256: string; size: number }>("POST", "/v1/files", { key: sk, raw: body, idempotencyKey: `release-data-file-${name}` });
    files[name] = { id: file.id, sha256: sha256(content), bytes: Buffer.byteLength(content) };
    return file.id;
  };
  const jsonl = [
    ...Array.from({ length: 10 }, (_, i) =>
      JSON.stringify({ name: `imported-${i + 1}`, status: i % 3 === 0 ? "paused" : "active", metadata: { batch: "imp", row: String(i + 1) } }),
    ),
    JSON.stringify({ name: "" }),
    "not json",
    "",
    JSON.stringify({ name: "imported-last", metadata: { batch: "file" } }),
  ].join("\n");
  const importFile = await upload("import_jsonl", "import.jsonl", "application/x-ndjson", `${jsonl}\n`);
  const badFile = await upload("import_bad_csv", "bad.csv", "text/csv", "title,status\nno name column,active\n");

  const rows = Array.from({ length: 20 }, (_, i) => `parted-${i + 1},${i % 2 ? "active" : "archived"},parts,"line ${i + 1}, quoted"`);
  const csv = `name,status,metadata[batch],metadata[note]\r\n${rows.join("\r\n")}\r\n`;
  const csvBytes = Buffer.from(csv);
  const split = Math.floor(csvBytes.length / 2);
  const up = await api.ok<Obj>("POST", "/v1/uploads", { key: sk, form: `purpose=resources_import&filename=parts.csv&bytes=${csvBytes.length}&type=csv` });
  const p1 = await api.ok<Obj>("POST", `/v1/uploads/${up.id}/parts`, { key: sk, raw: { body: csvBytes.subarray(0, split), type: "application/octet-stream" } });
  const p2 = await api.ok<Obj>("POST", `/v1/uploads/${up.id}/parts`, { key: sk, raw: { body: csvBytes.subarray(split), type: "application/octet-stream" } });
  const completed = await api.ok<Obj & { file: Obj }>("POST", `/v1/uploads/${up.id}/complete`, { key: sk, form: `part_ids[]=${p1.id}&part_ids[]=${p2.id}` });
  files["import_parts_csv"] = { id: completed.file.id, sha256: sha256(csvBytes), bytes: csvBytes.length };
  const pending = await api.ok<Obj>("POST", "/v1/uploads", { key: sk, form: "purpose=resources_import&filename=pending.jsonl&bytes=1000&type=jsonl" });
  await api.ok("POST", `/v1/uploads/${pending.id}/parts`, {
    key: sk,
    raw: { body: Buffer.from('{"name":"never completed"}\n'), type: "application/octet-stream" },
  });

  const jobs: Record<string, Obj> = {};
  const runJob = async (name: string, form: string, end: "succeeded" | "failed" = "succeeded") => {
    const job = await api.ok<Obj>("POST", "/v1/jobs", { key: sk, form, idempotencyKey: `release-data-job-${name}` });
    for (let i = 0; ; i++) {
      const now = await api.ok<Obj & { status: string }>("GET", `/v1/jobs/${job.id}`, { key: sk });
      if (now.status === end) break;
      if (["succeeded", "failed", "canceled"].includes(now.status) || i > 600)
        throw new Error(`job ${name}: ${now.status}, not ${end}: ${JSON.stringify(now)}`);
      await sleep(250);
    }
    jobs[name] = await api.ok<Obj>("GET", `/v1/jobs/${job.id}`, { key: sk });
    return jobs[name]!;
  };
  await runJob("import_file", `type=resources.import&params[file]=${importFile}`);
  await runJob("import_parts", `type=resources.import&params[file]=${completed.file.id}`);
  await runJob(
    "import_inline",
    "type=resources.import&params[items][0][name]=inline-1&params[items][1][name]=inline-2&params[items][1][status]=paused&params[items][2][name]=",
  );
  await runJob("import_invalid_file", `type=resources.import&params[file]=${badFile}`, "failed");
  await runJob(
    "bulk_update",
    "type=resources.bulk_update&params[filter][metadata][batch]=imp&params[update][status]=paused&params[update][metadata][bulk]=yes",
  );
  await runJob("bulk_delete", "type=resources.bulk_delete&params[filter][metadata][batch]=del");
  await runJob("export_csv", "type=resources.export&params[filter][status]=paused&params[format]=csv");
  await runJob("export_all", "type=resources.export&params[format]=jsonl");
  // The files the jobs made: results and exports.
  for (const [name, job] of Object.entries(jobs)) {
    const result = job["result"] as { results_file?: string; file?: string } | null;
    for (const [what, id] of [
      ["results", result?.results_file],
      ["export", result?.file],
    ] as const) {
      if (!id) continue;
      const contents = await api.call("GET", `/v1/files/${id}/contents`, { key: sk });
      if (contents.status !== 200) throw new Error(`file ${id}: ${contents.status}`);
      files[`${name}_${what}`] = { id, sha256: sha256(contents.bytes), bytes: contents.bytes.length };
    }
  }
  log(`${Object.keys(jobs).length} jobs ended; ${Object.keys(files).length} files`);

  // Every delivery so far done; then the endpoints point at a dead address, so the next events' deliveries stay pending.
  await settleDeliveries(api, sk);
  const dead = await deadUrl();
  for (const id of [e1.id, e2.id]) await api.ok("POST", `/v1/webhook_endpoints/${id}`, { key: sk, form: `url=${enc(dead)}` });
  await create("pending_one", "name=pending%20one&metadata[delivery]=pending");
  await api.ok("POST", `/v1/resources/${created["gamma_2"]!.id}`, { key: sk, form: "metadata[delivery]=pending" });
  await api.ok("DELETE", `/v1/resources/${created["gamma_3"]!.id}`, { key: sk });
  const pendingEvents = await waitForFailedAttempts(api, sk, e1.id, 3);
  const pendingDeliveries = {
    every_event: pendingEvents.map((e) => e.id),
    resources_v1a: pendingEvents.filter((e) => e.type.startsWith("resource.")).map((e) => e.id),
  };

  // Dashboard sessions: one of every scope, one read-only, one signed out (its key revoked).
  const session = async (name: string, form: string) => {
    const made = await api.ok<{ url: string; api_key: string; read_only: boolean; expires_at: number }>("POST", "/v1/dashboard_sessions", { key: sk, form });
    const secret = decodeURIComponent(made.url.split("#key=")[1] ?? "");
    const listed = (await admin.listKeys({ accountId: main })).keys.find((k) => k.id === made.api_key)!;
    keys[name] = {
      id: made.api_key,
      secret,
      account: main,
      kind: "restricted",
      livemode: false,
      scopes: [...listed.scopes],
      expires_at: made.expires_at,
      revoked: false,
      state: "valid",
    };
  };
  await session("dashboard_session", "expires_in=86400");
  await session("dashboard_session_read_only", "read_only=true&expires_in=86400");
  await session("dashboard_session_signed_out", "expires_in=3600");
  await admin.revokeKey({ keyId: keys["dashboard_session_signed_out"]!.id, reason: "release data: signed out" });
  Object.assign(keys["dashboard_session_signed_out"]!, { revoked: true, state: "api_key_revoked" });
  // The expiring key has expired by now.
  while (now() <= keys["restricted_expiring"]!.expires_at) await sleep(250);
  keys["restricted_expiring"]!.state = "api_key_expired";

  // What each key may do: one request per scope (a write aimed at what cannot change: a deleted resource, a finished
  // job, a completed upload), with the status it got.
  const probes: ManifestProbe[] = [];
  const probeRequests: [string, string, string][] = [
    ["resources:read", "GET", "/v1/resources?limit=1"],
    ["resources:write", "POST", `/v1/resources/${deleted}`],
    ["jobs:read", "GET", "/v1/jobs?limit=1"],
    ["jobs:write", "POST", `/v1/jobs/${jobs["bulk_update"]!.id}/cancel`],
    ["webhooks:write", "GET", "/v1/webhook_endpoints?limit=1"],
    ["events:read", "GET", "/v1/events?limit=1"],
    ["files:read", "GET", "/v1/files?limit=1"],
    ["files:write", "POST", `/v1/uploads/${up.id}/cancel`],
    ["request_logs:read", "GET", "/v1/request_logs?limit=1"],
  ];
  for (const [name, key] of Object.entries(keys)) {
    for (const [probe, method, path] of probeRequests) {
      const reply = await api.call(method, path, { key: key.secret, ...(method === "POST" ? { form: "" } : {}) });
      probes.push({ key: name, probe, method, path, status: reply.status });
    }
  }

  // The last write is done: everything recorded from here is at or before `madeTo`, and what the reads below log is after it.
  await settleRelay(api, sk);
  const madeTo = now();
  while (now() <= madeTo + 1) await sleep(100);

  const sequences: Record<string, number> = {};
  for (const name of ["alpha", "gamma_1", "unicode", "keyed"]) {
    const id = created[name]!.id;
    const events = await api.ok<{ data: { sequence: number }[] }>("GET", `/v1/events?object=${id}&limit=100`, { key: sk });
    sequences[id] = Math.max(...events.data.map((e) => e.sequence));
  }

  const reads = await recordReads(api, keys, {
    madeTo,
    created,
    deleted,
    jobs,
    files,
    endpoints,
    uploads: [up.id, pending.id],
    requestIds: Object.values(requestIds),
  });
  log(`${reads.length} reads, ${replays.length} replays, ${probes.length} probes recorded`);
  return {
    made_from: madeFrom,
    made_to: madeTo,
    accounts,
    keys,
    endpoints,
    files,
    sequences,
    pending_deliveries: pendingDeliveries,
    reads,
    replays,
    probes,
  };
}

/** Until no event of the account waits for a delivery (every endpoint answered 2xx). */
async function settleDeliveries(api: Api, key: string): Promise<void> {
  for (let i = 0; (await api.ok<{ data: unknown[] }>("GET", "/v1/events?delivery_success=false&limit=1", { key })).data.length > 0; i++) {
    if (i > 600) throw new Error("deliveries did not settle");
    await sleep(250);
  }
}

/** Until the events of the last writes are listed (the relay copied them) and a request log is written for each request. */
async function settleRelay(api: Api, key: string): Promise<void> {
  await sleep(3_000);
  await api.ok("GET", "/v1/events?limit=1", { key });
}

/** The events whose delivery to `endpoint` failed at least once and has not succeeded, once there are `count` of them. */
async function waitForFailedAttempts(api: Api, key: string, endpoint: string, count: number): Promise<{ id: string; type: string }[]> {
  for (let i = 0; ; i++) {
    const attempts = await api.ok<{ data: { event: string; status: string }[] }>("GET", `/v1/webhook_endpoints/${endpoint}/attempts?status=failed&limit=100`, {
      key,
    });
    const failed = [...new Set(attempts.data.map((a) => a.event))];
    if (failed.length >= count) {
      const events = [];
      for (const id of failed) events.push(await api.ok<{ id: string; type: string }>("GET", `/v1/events/${id}`, { key }));
      return events;
    }
    if (i > 600) throw new Error(`only ${failed.length} deliveries failed`);
    await sleep(250);
  }
}

interface ReadTargets {
  madeTo: number;
  created: Record<string, Obj>;
  deleted: string;
  jobs: Record<string, Obj>;
  files: Record<string, ManifestFile>;
  endpoints: Record<string, ManifestEndpoint>;
  uploads: string[];
  requestIds: string[];
}

/** Every read the packed-data test repeats, with the answer it got from the release that wrote the data. */
async function recordReads(api: Api, keys: Record<string, ManifestKey>, t: ReadTargets): Promise<ManifestRead[]> {
  const upTo = `created[lte]=${t.madeTo}`;
  const paths: [string, string, string, ManifestRead["compare"]?][] = [];
  const add = (name: string, path: string, key = "secret_test", compare: ManifestRead["compare"] = "exact") => paths.push([name, key, path, compare]);
  for (const [name, object] of Object.entries(t.created)) {
    const key = name.startsWith("live_") ? "secret_live" : name === "other_account" ? "secret_other_account" : "secret_test";
    add(`resource ${name}`, `/v1/resources/${object.id}`, key);
  }
  add("a live resource with a test key", `/v1/resources/${t.created["live_one"]!.id}`);
  add("another account's resource", `/v1/resources/${t.created["alpha"]!.id}`, "secret_other_account");
  add("resources", `/v1/resources?limit=100&${upTo}`);
  add("resources, first page of 5", `/v1/resources?limit=5&${upTo}`);
  add("resources, a page after a deleted id", `/v1/resources?limit=5&${upTo}&starting_after=${t.deleted}`);
  add("resources before", `/v1/resources?limit=3&ending_before=${t.created["gamma_4"]!.id}`);
  add("resources paused", `/v1/resources?limit=100&status=paused&${upTo}`);
  add("resources archived", `/v1/resources?limit=100&status=archived&${upTo}`);
  add("resources by metadata", `/v1/resources?limit=100&metadata[plan]=enterprise`);
  add("resources by an odd metadata key", `/v1/resources?limit=100&metadata[${enc("$where")}]=1`);
  add(
    "resources by ids",
    `/v1/resources?ids[]=${t.created["alpha"]!.id}&ids[]=${t.created["unicode"]!.id}&ids[]=${t.deleted}&ids[]=${t.created["live_one"]!.id}`,
  );
  add("resources live", `/v1/resources?limit=100`, "secret_live");
  add("resources of the other account", `/v1/resources?limit=100`, "secret_other_account");
  add("resources with a publishable key", `/v1/resources?limit=100&${upTo}`, "publishable_test");
  add("resources with a dashboard session", `/v1/resources?limit=10&${upTo}`, "dashboard_session");
  for (const query of [
    "name~'al'",
    "name~'GAMMA'",
    "name:'beta'",
    "status:'paused' AND metadata['plan']:'enterprise'",
    "status:'active' OR status:'archived'",
    `created<=${t.madeTo} AND metadata['batch']:'imp'`,
    "metadata['batch']:'parts'",
    "name~'ün'",
  ]) {
    add(`search ${query}`, `/v1/resources/search?limit=100&query=${enc(query)}`);
  }
  add("search, page of 2", `/v1/resources/search?limit=2&query=${enc("name~'imported'")}`);
  add("events", `/v1/events?limit=100&${upTo}`);
  add("events updated", `/v1/events?limit=100&type=resource.updated&${upTo}`);
  add("events of jobs", `/v1/events?limit=100&types[]=job.succeeded&types[]=job.failed&${upTo}`);
  add("events by prefix", `/v1/events?limit=100&type=${enc("resource.*")}&${upTo}`);
  for (const name of ["alpha", "gamma_1", "unicode"]) {
    add(`events of ${name}`, `/v1/events?limit=100&object=${t.created[name]!.id}`);
    add(`events of ${name} after 0`, `/v1/events?limit=100&object=${t.created[name]!.id}&sequence[gt]=0`);
  }
  add("events with a restricted key", `/v1/events?limit=5&${upTo}`, "restricted_read_events");
  add("webhook endpoints", "/v1/webhook_endpoints?limit=100");
  for (const [name, endpoint] of Object.entries(t.endpoints)) {
    add(`webhook endpoint ${name}`, `/v1/webhook_endpoints/${endpoint.id}`);
    add(`attempts of ${name}`, `/v1/webhook_endpoints/${endpoint.id}/attempts?limit=100`, "secret_test", "includes");
  }
  add("jobs", `/v1/jobs?limit=100&${upTo}`);
  add("jobs failed", `/v1/jobs?limit=100&status=failed`);
  add("jobs exports", `/v1/jobs?limit=100&type=resources.export`);
  for (const [name, job] of Object.entries(t.jobs)) {
    add(`job ${name}`, `/v1/jobs/${job.id}`);
    add(`errors of job ${name}`, `/v1/jobs/${job.id}/errors?limit=100`);
  }
  add("files", `/v1/files?limit=100&${upTo}`);
  add("files of jobs", `/v1/files?limit=100&purpose=job_results`);
  for (const [name, file] of Object.entries(t.files)) add(`file ${name}`, `/v1/files/${file.id}`);
  for (const id of t.uploads) add(`upload ${id}`, `/v1/uploads/${id}`);
  add("request logs", `/v1/request_logs?limit=100&${upTo}`);
  add("request logs 4xx", `/v1/request_logs?limit=100&status=4xx&${upTo}`);
  add("request logs of creates", `/v1/request_logs?limit=100&method=POST&path=${enc("/v1/resources")}&${upTo}`);
  add("request logs of a key", `/v1/request_logs?limit=100&api_key=${keys["restricted_resources_read"]!.id}&${upTo}`);
  add("request logs by idempotency key", `/v1/request_logs?limit=100&idempotency_key=release-data-create`);
  for (const id of t.requestIds) add(`request log ${id}`, `/v1/request_logs/${id}`);

  const reads: ManifestRead[] = [];
  for (const [name, key, path, compare] of paths) {
    const reply = await api.call("GET", path, { key: keys[key]!.secret });
    reads.push({ name, key, path, status: reply.status, body: JSON.parse(reply.body) as unknown, compare: compare ?? "exact" });
  }
  return reads;
}
