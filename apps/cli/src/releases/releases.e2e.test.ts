// The packed databases of earlier releases (apps/cli/test-data/releases/<release>/, made by make-data.ts through
// each release's public API), each read back by the current build: a copy of the data directory under a `mongod`
// of this machine, the current core, worker and gateway as real processes on it (core runs the migrations at its
// start), then every recorded read answered as the release answered it (objects by id, lists, filters, search,
// events, jobs, files and their bytes, request logs, uploads), the keys with their scopes, the Idempotency-Key
// replays, the pending deliveries delivered and signed with the recorded secrets, event sequences continuing, and
// new writes of every kind. The processes run with their clock moved to a minute after the release stopped
// (clock-shift.mjs) and the server's TTL monitor off: the test is of an upgrade made then, whatever day it runs.
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { RELEASE } from "@rms/config";
import { developmentCertificate } from "@rms/gateway";
import { KeyKind } from "@rms/proto";
import { freePort, startDatabase, type RunningDatabase } from "@rms/test-db";
import { eventually } from "@rms/test-db/testkit";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../paths.js";
import type { Child } from "../stack/children.js";
import { adminClient, startCoreProcess, startGatewayProcess, startWorkerProcess } from "../stack/processes.js";
import { Api, multipartFile, sleep } from "./http.js";
import { ARCHIVE_FILE, readManifest, RELEASES_DATA_DIR, type ManifestRead, type ReleaseManifest } from "./manifest.js";
import { binaryEngineEnv, unpackDataDirectory } from "./pack.js";
import { signedWithPublicKey, signedWithSecret } from "./signatures.js";
import { SCOPES } from "./write-data.js";

const RELEASES = readdirSync(RELEASES_DATA_DIR, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);
const CLOCK_SHIFT = fileURLToPath(new URL("./clock-shift.mjs", import.meta.url));
/** The step files of this build: every one must have run on the packed data. */
const STEP_IDS = readdirSync(join(repoRoot, "apps", "core", "src", "migrations", "steps"))
  .filter((name) => /^\d{4}-.+\.ts$/.test(name) && !name.endsWith(".test.ts"))
  .map((name) => name.slice(0, -3))
  .sort();

const sha256 = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("hex");
const enc = encodeURIComponent;

/** What an answer shows that changes without any write of the test: how many endpoints still owe an event, and request ids. */
function stable(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stable);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>)
      .filter(([k]) => k !== "pending_webhooks" && k !== "request_id")
      .map(([k, v]) => [k, stable(v)]),
  );
}

/** A recorded read answered the same way: the same status and every recorded field the same (a release may add fields). */
function expectSameAnswer(read: ManifestRead, status: number, body: unknown): void {
  expect(status, read.name).toBe(read.status);
  if (read.compare === "includes") {
    const recorded = (read.body as { data: { id: string }[] }).data;
    const ids = new Set(recorded.map((item) => item.id));
    const now = (body as { data: { id: string }[] }).data.filter((item) => ids.has(item.id));
    expect(stable(now), read.name).toMatchObject(stable(recorded) as object);
    return;
  }
  expect(stable(body), read.name).toMatchObject(stable(read.body) as object);
}

/** Whether a `mongod` of `version` opens data of feature compatibility `fcv`: the same major version, or the next one. */
function opens(version: string, fcv: string): boolean {
  const major = (v: string) => Number(v.split(".")[0]);
  return major(version) - major(fcv) === 0 || major(version) - major(fcv) === 1;
}

interface Delivery {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A webhook receiver keeping every delivery, answering 200. */
async function startReceiver(): Promise<{ url: string; deliveries: Delivery[]; server: Server }> {
  const deliveries: Delivery[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
    req.on("end", () => {
      deliveries.push({ headers: req.headers, body });
      res.end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, deliveries, server };
}

const eventIdOf = (d: Delivery) => String(d.headers["webhook-id"]);

describe.each(RELEASES)("the packed database of release %s, under the current build", (release) => {
  const manifest: ReleaseManifest = readManifest(release);
  const work = mkdtempSync(join(tmpdir(), `rms-release-${release}-`));
  const keyOf = (name: string) => manifest.keys[name]!.secret;
  let database: RunningDatabase;
  let client: MongoClient;
  const children: Child[] = [];
  let api: Api;
  let coreAddr: string;
  const receivers: Record<string, Awaited<ReturnType<typeof startReceiver>>> = {};

  beforeAll(async () => {
    await unpackDataDirectory(join(RELEASES_DATA_DIR, release, ARCHIVE_FILE), join(work, "db"));
    database = await startDatabase({ dataDir: join(work, "db"), env: binaryEngineEnv(process.env), skip: ["external", "testcontainers"] });
    const { version, feature_compatibility_version: fcv } = manifest.mongod;
    expect(
      opens(database.version, fcv),
      `the data of ${release} was packed by mongod ${version} (feature compatibility ${fcv}); this machine's launcher started mongod ` +
        `${database.version}, which cannot open it`,
    ).toBe(true);
    client = await new MongoClient(database.uri).connect();
    // Nothing expires by the server's clock: the processes' clock is a minute after the release stopped.
    await client.db("admin").command({ setParameter: 1, ttlMonitorEnabled: false });
    const shift = (manifest.made_to + 60) * 1000 - Date.now();
    const clock = { NODE_OPTIONS: `--import=${pathToFileURL(CLOCK_SHIFT).href}`, RMS_TEST_CLOCK_SHIFT_MS: String(shift) };
    const settings = {
      ...clock,
      RMS_SECRET_KEY: manifest.settings.RMS_SECRET_KEY,
      WEBHOOK_ALLOW_PRIVATE: "true",
      // The pending deliveries fail at the release's dead address until the test points the endpoints at its receivers
      // (after the reads): a schedule that outlasts that, and then retries within seconds.
      WEBHOOK_RETRY_SCHEDULE: Array.from({ length: 40 }, () => "3s").join(","),
    };
    const mongo = { mongoUri: database.uri, databaseName: manifest.database };
    const corePort = await freePort();
    coreAddr = `127.0.0.1:${corePort}`;
    children.push(await startCoreProcess({ ...mongo, port: corePort, env: settings }));
    children.push(startWorkerProcess({ ...mongo, env: settings }));
    // The gateway's certificate made by this process's clock, so a client's check of its validity passes.
    await developmentCertificate(join(work, "stack", "tls"));
    const port = await freePort();
    children.push(
      await startGatewayProcess({
        ...mongo,
        coreAddr,
        dataDir: join(work, "stack"),
        port,
        env: { ...clock, RATE_LIMIT_TEST: "100000", RATE_LIMIT_LIVE: "100000", RATE_LIMIT_ADDRESS: "100000" },
      }),
    );
    api = new Api(join(work, "stack"), port);
  }, 300_000);

  afterAll(async () => {
    api?.close();
    for (const receiver of Object.values(receivers)) await new Promise<void>((resolve) => receiver.server.close(() => resolve()));
    for (const child of children.reverse()) await child.stop(10_000);
    await client?.close();
    await database?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it("ran every migration step of this build at core's start, recorded as done", async () => {
    const records = await client.db(manifest.database).collection<{ _id: string }>("migrations").find({}).sort({ _id: 1 }).toArray();
    expect(records.map((r) => r._id)).toEqual(STEP_IDS);
    for (const record of records) expect(record, record._id).toMatchObject({ state: "done", finished_by_release: RELEASE });
  }, 60_000);

  it("answers every recorded read as the release answered it", async () => {
    for (const read of manifest.reads) {
      const reply = await api.call("GET", read.path, { key: keyOf(read.key) });
      expectSameAnswer(read, reply.status, JSON.parse(reply.body));
    }
  }, 300_000);

  it("keeps every key with its kind, mode, scopes, expiry and revocation; each key may do exactly what it could", async () => {
    const admin = adminClient(coreAddr);
    try {
      for (const account of Object.values(manifest.accounts)) {
        const listed = new Map((await admin.listKeys({ accountId: account })).keys.map((k) => [k.id, k]));
        for (const [name, key] of Object.entries(manifest.keys).filter(([, k]) => k.account === account)) {
          const now = listed.get(key.id);
          expect(now, name).toBeDefined();
          const kind = { secret: KeyKind.SECRET, publishable: KeyKind.PUBLISHABLE, restricted: KeyKind.RESTRICTED }[key.kind];
          expect(
            { kind: now!.kind, livemode: now!.livemode, scopes: [...now!.scopes].sort(), expires_at: Number(now!.expiresAt), revoked: now!.revokedAt !== 0n },
            name,
          ).toEqual({
            kind,
            livemode: key.livemode,
            scopes: [...key.scopes].sort(),
            expires_at: key.expires_at,
            revoked: key.revoked,
          });
        }
      }
    } finally {
      admin.close();
    }
    for (const probe of manifest.probes) {
      const reply = await api.call(probe.method, probe.path, { key: keyOf(probe.key), ...(probe.method === "POST" ? { form: "" } : {}) });
      expect(reply.status, `${probe.key} ${probe.probe}: ${reply.body}`).toBe(probe.status);
    }
    for (const [name, key] of Object.entries(manifest.keys)) {
      const reply = await api.call("GET", "/v1/resources?limit=1", { key: key.secret });
      const code = reply.status === 401 ? (JSON.parse(reply.body) as { error: { code: string } }).error.code : "valid";
      if (key.kind === "restricted" && !key.scopes.includes("resources:read") && reply.status === 403) continue;
      expect(code, name).toBe(key.state);
    }
  }, 300_000);

  it("replays the answers of requests made under an Idempotency-Key, byte for byte", async () => {
    for (const replay of manifest.replays) {
      const reply = await api.call("POST", replay.path, { key: keyOf(replay.key), form: replay.form, idempotencyKey: replay.idempotency_key });
      expect(reply.status, replay.idempotency_key).toBe(replay.status);
      expect(reply.body, replay.idempotency_key).toBe(replay.body);
      expect(reply.headers["idempotent-replayed"], replay.idempotency_key).toBe("true");
    }
  }, 60_000);

  it("serves every file byte for byte", async () => {
    for (const [name, file] of Object.entries(manifest.files)) {
      const contents = await api.call("GET", `/v1/files/${file.id}/contents`, { key: keyOf("secret_test") });
      expect(contents.status, name).toBe(200);
      expect({ sha256: sha256(contents.bytes), bytes: contents.bytes.length }, name).toEqual({ sha256: file.sha256, bytes: file.bytes });
    }
  }, 60_000);

  it("delivers the deliveries the release left pending, signed with the secrets it recorded", async () => {
    const sk = keyOf("secret_test");
    for (const name of Object.keys(manifest.pending_deliveries)) {
      receivers[name] = await startReceiver();
      await api.ok("POST", `/v1/webhook_endpoints/${manifest.endpoints[name]!.id}`, { key: sk, form: `url=${enc(receivers[name]!.url)}` });
    }
    await eventually(
      () => {
        for (const [name, ids] of Object.entries(manifest.pending_deliveries)) {
          const arrived = new Set(receivers[name]!.deliveries.map(eventIdOf));
          expect(
            ids.filter((id) => !arrived.has(id)),
            `${name}: pending events not delivered`,
          ).toEqual([]);
        }
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    for (const [name, ids] of Object.entries(manifest.pending_deliveries)) {
      const endpoint = manifest.endpoints[name]!;
      for (const delivery of receivers[name]!.deliveries.filter((d) => ids.includes(eventIdOf(d)))) {
        if (endpoint.scheme === "v1a")
          expect(signedWithPublicKey(delivery.headers, delivery.body, endpoint.public_key!), `${name} ${eventIdOf(delivery)}`).toBe(true);
        // During the rotation's grace every secret recorded signs.
        else
          for (const secret of endpoint.secrets) expect(signedWithSecret(delivery.headers, delivery.body, secret), `${name} ${eventIdOf(delivery)}`).toBe(true);
      }
    }
    await eventually(
      async () => {
        expect((await api.ok<{ data: unknown[] }>("GET", "/v1/events?delivery_success=false&limit=1", { key: sk })).data).toEqual([]);
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
  }, 240_000);

  it("continues every object's event sequence", async () => {
    const sk = keyOf("secret_test");
    for (const [id, last] of Object.entries(manifest.sequences)) {
      await api.ok("POST", `/v1/resources/${id}`, { key: sk, form: `metadata[upgraded_to]=${enc(RELEASE)}` });
      await eventually(
        async () => {
          const after = await api.ok<{ data: { type: string; sequence: number }[] }>("GET", `/v1/events?object=${id}&sequence[gt]=${last}`, { key: sk });
          expect(after.data.map((e) => e.type)).toEqual(["resource.updated"]);
          expect(after.data[0]!.sequence).toBeGreaterThan(last);
        },
        { timeoutMs: 30_000, intervalMs: 250 },
      );
    }
  }, 180_000);

  it("takes new writes of every kind", async () => {
    const sk = keyOf("secret_test");
    // Resources: create (keyed), update, delete, found by list and search; by a key the release made.
    const made = await api.ok<{ id: string }>("POST", "/v1/resources", {
      key: sk,
      form: "name=after%20upgrade&metadata[batch]=new",
      idempotencyKey: "after-upgrade-create",
    });
    const requestId = String(
      (await api.call("POST", "/v1/resources", { key: sk, form: "name=after%20upgrade&metadata[batch]=new", idempotencyKey: "after-upgrade-create" })).headers[
        "request-id"
      ],
    );
    await api.ok("POST", `/v1/resources/${made.id}`, { key: sk, form: "status=archived" });
    const byRestricted = await api.ok<{ id: string }>("POST", "/v1/resources", {
      key: keyOf("restricted_resources_write"),
      form: "name=by%20an%20old%20restricted%20key",
    });
    await api.ok("DELETE", `/v1/resources/${byRestricted.id}`, { key: sk });
    expect((await api.call("GET", `/v1/resources/${byRestricted.id}`, { key: sk })).status).toBe(404);
    const searched = await api.ok<{ data: { id: string; status: string }[] }>("GET", `/v1/resources/search?query=${enc("name~'after'")}`, { key: sk });
    expect(searched.data).toMatchObject([{ id: made.id, status: "archived" }]);
    const listed = await api.ok<{ data: { id: string }[] }>("GET", "/v1/resources?limit=1", { key: sk });
    expect(listed.data[0]!.id).toBe(made.id);

    // Keys: a new restricted key has exactly its scope.
    const admin = adminClient(coreAddr);
    let restricted: string;
    try {
      restricted = (await admin.createKey({ accountId: manifest.accounts["main"]!, kind: KeyKind.RESTRICTED, livemode: false, scopes: ["events:read"] }))
        .secret;
    } finally {
      admin.close();
    }
    expect((await api.call("GET", "/v1/events?limit=1", { key: restricted })).status).toBe(200);
    expect((await api.call("GET", "/v1/resources?limit=1", { key: restricted })).status).toBe(403);

    // Webhooks: the recorded endpoint signs new events with its recorded secrets; a new endpoint, rotated.
    const e1 = manifest.endpoints["every_event"]!;
    await eventually(
      () => {
        const delivery = receivers["every_event"]!.deliveries.find((d) => JSON.parse(d.body).data.object.id === made.id);
        expect(delivery).toBeDefined();
        expect(signedWithSecret(delivery!.headers, delivery!.body, e1.secrets[0]!)).toBe(true);
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    const endpoint = await api.ok<{ id: string; secret: string }>("POST", "/v1/webhook_endpoints", {
      key: sk,
      form: `url=${enc(receivers["every_event"]!.url)}&enabled_events[]=job.succeeded`,
    });
    const rotated = await api.ok<{ secret: string }>("POST", `/v1/webhook_endpoints/${endpoint.id}/rotate_secret`, { key: sk, form: "expires_in=0" });
    expect(rotated.secret).not.toBe(endpoint.secret);

    // Files and jobs: an upload, an import from it, a bulk update, an export; an upload in parts.
    const rows = `${JSON.stringify({ name: "new-import-1", metadata: { batch: "new" } })}\n${JSON.stringify({ name: "new-import-2" })}\n`;
    const file = await api.ok<{ id: string }>("POST", "/v1/files", {
      key: sk,
      raw: multipartFile("resources_import", "new.jsonl", "application/x-ndjson", rows),
    });
    const runJob = async (form: string) => {
      const job = await api.ok<{ id: string }>("POST", "/v1/jobs", { key: sk, form });
      let ended: { status: string; result: Record<string, unknown> | null } | undefined;
      await eventually(
        async () => {
          ended = await api.ok("GET", `/v1/jobs/${job.id}`, { key: sk });
          expect(ended!.status).toBe("succeeded");
        },
        { timeoutMs: 120_000, intervalMs: 250 },
      );
      return ended!;
    };
    expect((await runJob(`type=resources.import&params[file]=${file.id}`)).result).toMatchObject({ created: 2 });
    expect((await runJob("type=resources.bulk_update&params[filter][metadata][batch]=new&params[update][status]=paused")).result).toMatchObject({ updated: 2 });
    const exported = await runJob("type=resources.export&params[filter][metadata][batch]=new");
    const exportFile = (exported.result as { file: string }).file;
    const lines = (await api.call("GET", `/v1/files/${exportFile}/contents`, { key: sk })).body.trim().split("\n");
    expect(lines.map((l) => JSON.parse(l).status).sort()).toEqual(["paused", "paused"]);
    const bytes = Buffer.from("name\r\nparted-after-upgrade\r\n");
    const upload = await api.ok<{ id: string }>("POST", "/v1/uploads", {
      key: sk,
      form: `purpose=resources_import&filename=new.csv&bytes=${bytes.length}&type=csv`,
    });
    const part = await api.ok<{ id: string }>("POST", `/v1/uploads/${upload.id}/parts`, { key: sk, raw: { body: bytes, type: "application/octet-stream" } });
    const completed = await api.ok<{ status: string; file: { id: string; sha256: string } }>("POST", `/v1/uploads/${upload.id}/complete`, {
      key: sk,
      form: `part_ids[]=${part.id}`,
    });
    expect(completed.file.sha256).toBe(sha256(bytes));
    expect((await api.call("GET", `/v1/files/${completed.file.id}/contents`, { key: sk })).bytes.equals(bytes)).toBe(true);

    // A dashboard session, used.
    const session = await api.ok<{ url: string }>("POST", "/v1/dashboard_sessions", { key: sk, form: "read_only=true" });
    const sessionKey = decodeURIComponent(session.url.split("#key=")[1]!);
    expect((await api.call("GET", "/v1/resources?limit=1", { key: sessionKey })).status).toBe(200);
    expect((await api.call("POST", "/v1/resources", { key: sessionKey, form: "name=x" })).status).toBe(403);

    // Request logs: the keyed create's replay is logged.
    await eventually(
      async () => {
        const log = await api.call("GET", `/v1/request_logs/${requestId}`, { key: sk });
        expect(log.status).toBe(200);
        expect(JSON.parse(log.body)).toMatchObject({ idempotency_key: "after-upgrade-create", idempotent_replayed: true });
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    // Every scope the release's keys had is still enforced on the new objects too.
    for (const scope of SCOPES) {
      const name = `restricted_${scope.replace(":", "_")}`;
      const reply = await api.call("GET", `/v1/resources/${made.id}`, { key: keyOf(name) });
      expect(reply.status, name).toBe(scope === "resources:read" ? 200 : 403);
    }
    // Waits a little for the last deliveries, so that stopping the stack leaves nothing half done.
    await sleep(500);
  }, 300_000);
});
