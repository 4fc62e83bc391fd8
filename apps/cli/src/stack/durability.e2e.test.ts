// Durability (CONTRACT.md section 10, in ../shared/docs/): every write the API acknowledges is acknowledged by the
// database with majority write concern and journaling, so a SIGKILL of `mongod` loses none of them. A burst of
// acknowledged writes of every kind goes through the real gateway, core and a worker (resource creates with
// Idempotency-Keys in forms and JSON, updates, deletes, a webhook endpoint, an import job with its checkpoints,
// the events and deliveries they make); the database is SIGKILLed right after the last acknowledgement; a restart
// on the same data directory must find every one of them, first in the database itself, then through a
// restarted stack that finishes the work left (outboxes, deliveries, the job) exactly once.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newMasterKeyText } from "@rms/core/settings";
import { describeDatabase, startDatabase, testDatabaseName, type RunningDatabase } from "@rms/test-db";
import { eventually } from "@rms/test-db/testkit";
import { MongoClient } from "mongodb";
import { Webhook } from "standardwebhooks";
import { afterAll, describe, expect, it } from "vitest";
import type { Child } from "./children.js";
import { freePort, httpsCall, newTestKey, startCoreProcess, startGatewayProcess, startWorkerProcess, type HttpsReply } from "./processes.js";

// biome-ignore lint/suspicious/noExplicitAny: the test reads arbitrary JSON bodies and documents; each assertion states the shape it expects.
type Json = Record<string, any>;
/** A stored document: its `_id` is a string (core's ids), the rest read as JSON. */
type Doc = Json & { _id: string };

/** Resources created one by one (half in forms, half in JSON), each with its own Idempotency-Key. */
const CREATES = 24;
/**
 * Items of the import job: three chunks (IMPORT_CHUNK is 1,000). The kill comes once a checkpoint has been seen, often
 * before the job finishes (the log says where it landed).
 */
const IMPORT_ITEMS = 3_000;
/** Requests in flight at once during the burst. */
const CONCURRENCY = 4;

// With MONGODB_URI set the launcher starts nothing: there is no mongod process this test could kill.
const external = Boolean(process.env.MONGODB_URI);
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

/** An acknowledged change of one resource: the event it must have (type, and its `sequence` = the version it made). */
interface Change {
  type: "resource.created" | "resource.updated" | "resource.deleted";
  sequence: number;
}

/** What the API acknowledged about one resource, in order. */
interface Tracked {
  id: string;
  /** The last acknowledged representation (create or update answer); null once deleted. */
  body: Json | null;
  changes: Change[];
}

/** One acknowledged POST made with an Idempotency-Key, to check its record and replay it after the restart. */
interface Keyed {
  key: string;
  path: string;
  payload: { form: string } | { json: unknown };
  status: number;
  body: string;
}

/** Runs `work` over `items`, `CONCURRENCY` at a time, in order within each lane. */
async function inLanes<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

function metadataOf(pairs: { k: string; v: string }[] | undefined): Record<string, string> {
  return Object.fromEntries((pairs ?? []).map(({ k, v }) => [k, v]));
}

describe("durability", () => {
  it.skipIf(external)(
    `${external ? "[skipped: MONGODB_URI is set, so there is no database process to SIGKILL] " : ""}every write the API acknowledged (creates with ` +
      `Idempotency-Keys in forms and JSON, updates, deletes, an endpoint, an import job's checkpoints, events, deliveries) survives a SIGKILL of ` +
      `mongod right after the last acknowledgement`,
    async () => {
      // Made here, not at load: a skipped test leaves nothing behind. Removed last (cleanups run in reverse).
      const dataDir = mkdtempSync(join(tmpdir(), "rms-durability-"));
      cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
      const dbPort = await freePort();
      const dbDir = join(dataDir, "db");
      let database: RunningDatabase = await startDatabase({ dataDir: dbDir, port: dbPort });
      cleanups.push(() => database.stop());
      console.log(`durability: database ${describeDatabase(database)}, pid ${database.pid}`);
      expect(database.pid, "the launcher started a database process of its own").toEqual(expect.any(Number));
      const databaseName = testDatabaseName("durability");
      const corePort = await freePort();
      const coreAddr = `127.0.0.1:${corePort}`;
      const gatewayPort = await freePort();
      // Core and worker share the settings: the key that seals endpoint secrets, loopback deliveries, a short
      // retry schedule and a short jobs lease (the job the dead worker held is taken over soon after the restart).
      const settings = {
        RMS_SECRET_KEY: newMasterKeyText(),
        WEBHOOK_ALLOW_PRIVATE: "true",
        WEBHOOK_RETRY_SCHEDULE: "1s,1s,2s,2s,5s,5s,5s,5s",
        JOBS_LEASE_MS: "2000",
      };
      let apps: Child[] = [];
      cleanups.push(async () => {
        for (const child of apps.reverse()) await child.stop(2_000);
      });
      const startApps = async (mongoUri: string) => {
        apps = [];
        apps.push(await startCoreProcess({ mongoUri, databaseName, port: corePort, env: settings }));
        apps.push(
          await startGatewayProcess({
            coreAddr,
            mongoUri,
            databaseName,
            dataDir,
            port: gatewayPort,
            env: { RATE_LIMIT_TEST: "100000", RATE_LIMIT_LIVE: "100000", RATE_LIMIT_ADDRESS: "100000" },
          }),
        );
        apps.push(startWorkerProcess({ mongoUri, databaseName, env: settings }));
      };
      await startApps(database.uri);

      // The receiver: verifies every delivery with the Standard Webhooks library, counts 2xx answers per event id.
      let verifier: Webhook | undefined;
      const delivered = new Map<string, number>();
      let unverified = 0;
      const receiver = createServer((request, response) => {
        const chunks: Buffer[] = [];
        request.on("data", (chunk: Buffer) => chunks.push(chunk));
        request.on("end", () => {
          try {
            const { id } = verifier!.verify(Buffer.concat(chunks).toString("utf8"), request.headers as IncomingHttpHeaders & Record<string, string>) as {
              id: string;
            };
            delivered.set(id, (delivered.get(id) ?? 0) + 1);
            response.end("ok");
          } catch {
            unverified++;
            response.writeHead(400).end();
          }
        });
      });
      await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
      cleanups.push(() => new Promise<void>((resolve) => receiver.close(() => resolve())));

      const { accountId, secret } = await newTestKey(coreAddr);
      const call = (method: string, path: string, payload?: Keyed["payload"], key?: string): Promise<HttpsReply> => {
        const headers: Record<string, string> = {};
        if (payload !== undefined && "json" in payload) headers["content-type"] = "application/json";
        if (key !== undefined) headers["idempotency-key"] = key;
        const body = payload === undefined ? undefined : "form" in payload ? payload.form : JSON.stringify(payload.json);
        return httpsCall(dataDir, gatewayPort, method, path, { key: secret, headers, ...(body === undefined ? {} : { form: body }) });
      };
      const keyed: Keyed[] = [];
      /** A POST that must be acknowledged; with a key it is recorded for the checks after the restart. */
      const post = async (path: string, payload: Keyed["payload"], status: number, key?: string): Promise<Json> => {
        const reply = await call("POST", path, payload, key);
        expect(reply.status, `POST ${path}: ${reply.body}`).toBe(status);
        if (key !== undefined) keyed.push({ key, path, payload, status: reply.status, body: reply.body });
        return JSON.parse(reply.body) as Json;
      };

      // ---- The burst ----
      const endpoint = await post(
        "/v1/webhook_endpoints",
        { json: { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`, enabled_events: ["*"] } },
        201,
        "durability-endpoint",
      );
      verifier = new Webhook(endpoint.secret as string);

      const tracked: Tracked[] = [];
      await inLanes(
        Array.from({ length: CREATES }, (_, i) => i),
        async (i) => {
          const fields = {
            name: `durability-${i}`,
            status: i % 5 === 0 ? "paused" : "active",
            metadata: { i: String(i), lane: i % 2 === 0 ? "form" : "json" },
          };
          const payload = i % 2 === 0 ? { form: `name=durability-${i}&status=${fields.status}&metadata[i]=${i}&metadata[lane]=form` } : { json: fields };
          const body = await post("/v1/resources", payload, 201, `durability-create-${i}`);
          tracked[i] = { id: body.id, body, changes: [{ type: "resource.created", sequence: 0 }] };
        },
      );
      const update = async (t: Tracked, payload: Keyed["payload"], key?: string) => {
        t.body = await post(`/v1/resources/${t.id}`, payload, 200, key);
        t.changes.push({ type: "resource.updated", sequence: t.changes.length });
      };
      // Round 1: every resource, keyed, forms and JSON in turn; a third of them change status too.
      await inLanes(tracked, async (t) => {
        const i = tracked.indexOf(t);
        const status = i % 3 === 0 ? "archived" : undefined;
        await update(
          t,
          i % 2 === 0 ? { form: `metadata[step]=1${status ? `&status=${status}` : ""}` } : { json: { metadata: { step: "1" }, ...(status ? { status } : {}) } },
          `durability-update-${i}-1`,
        );
      });
      // Deletes: a quarter of them.
      const deleted = tracked.filter((_, i) => i % 4 === 3);
      await inLanes(deleted, async (t) => {
        const reply = await call("DELETE", `/v1/resources/${t.id}`);
        expect(reply.status, reply.body).toBe(200);
        expect(JSON.parse(reply.body)).toEqual({ id: t.id, object: "resource", deleted: true });
        t.body = null;
        t.changes.push({ type: "resource.deleted", sequence: t.changes.length });
      });
      const live = tracked.filter((t) => t.body !== null);
      // Round 2: the survivors, without keys; a metadata key set and one removed.
      await inLanes(live, async (t) => {
        await update(t, { form: `metadata[step]=2&metadata[i]=` });
      });

      // The import job, then its progress as the API shows it until a checkpoint has been seen (or it finished).
      const job = await post(
        "/v1/jobs",
        {
          json: {
            type: "resources.import",
            params: { items: Array.from({ length: IMPORT_ITEMS }, (_, n) => ({ name: `durability-import-${n}`, metadata: { batch: "durability" } })) },
          },
        },
        201,
        "durability-import",
      );
      const seenJob = await eventually(
        async () => {
          const reply = await call("GET", `/v1/jobs/${job.id}`);
          expect(reply.status).toBe(200);
          const seen = JSON.parse(reply.body) as Json;
          expect(seen.progress.processed > 0 || ["succeeded", "failed", "canceled"].includes(seen.status)).toBe(true);
          return seen;
        },
        { timeoutMs: 120_000, intervalMs: 20 },
      );
      // Writes acknowledged after that read: their journaling covers the checkpoint the read saw.
      await update(live[0]!, { json: { metadata: { step: "3" } } }, "durability-update-last");
      const lastBody = await post("/v1/resources", { json: { name: "durability-last", metadata: { last: "yes" } } }, 201, "durability-create-last");
      process.kill(database.pid!, "SIGKILL");
      // ---- SIGKILL right after the last acknowledgement ----

      tracked.push({ id: lastBody.id, body: lastBody, changes: [{ type: "resource.created", sequence: 0 }] });
      const changes = tracked.reduce((sum, t) => sum + t.changes.length, 0);
      console.log(
        `durability: acknowledged before the kill: ${tracked.length} creates (${keyed.filter((k) => k.path === "/v1/resources").length} with ` +
          `Idempotency-Keys, forms and JSON), ` +
          `${changes - tracked.length - deleted.length} updates, ${deleted.length} deletes, 1 webhook endpoint, 1 import job of ${IMPORT_ITEMS} items ` +
          `(last seen ${seenJob.status}, processed ${seenJob.progress.processed}); ${keyed.length} Idempotency-Keys; ${delivered.size} events delivered so far`,
      );
      for (const child of apps.reverse()) await child.stop(2_000);
      apps = [];
      await database.stop(); // its process is gone already: this only forgets it
      database = await startDatabase({ dataDir: dbDir, port: dbPort });
      const client = await new MongoClient(database.uri).connect();
      cleanups.push(() => client.close());
      const db = client.db(databaseName);

      // ---- In the database, before anything else touches it ----
      const scope = (key: string) => `${accountId}/test/${key}`;
      const resources = db.collection<Doc>("resources");
      const events = db.collection<Doc>("events");
      const deliveries = db.collection<Doc>("webhook_deliveries");
      const eventsOf = async () => {
        const found = await events.find({ account: accountId }, { projection: { type: 1, "object.id": 1, sequence: 1, pending_endpoints: 1 } }).toArray();
        const byChange = new Map<string, Json[]>();
        for (const e of found) byChange.set(`${e.object.id}/${e.sequence}`, [...(byChange.get(`${e.object.id}/${e.sequence}`) ?? []), e]);
        return { found, byChange };
      };
      const before = await eventsOf();
      // Everything acknowledged that the restarted database does not hold, so a failure names all of it at once.
      const lost: string[] = [];
      let pendingInOutbox = 0;
      for (const t of tracked) {
        const doc = await resources.findOne({ _id: t.id });
        const pending = new Set<number>(((doc?.pending_events as Json[] | undefined) ?? []).map((e) => e.sequence as number));
        const version = t.changes.length - 1;
        if (t.body === null) {
          // Deleted: a tombstone (its deletion event possibly still to relay) or gone.
          if (doc && (doc.deleted !== true || doc.version !== version)) lost.push(`delete of ${t.id} (found version ${doc.version}, deleted ${doc.deleted})`);
        } else if (!doc) lost.push(`${t.id} (${t.body.name}): missing, ${t.changes.length} acknowledged changes`);
        else {
          const found = { name: doc.name, status: doc.status, metadata: metadataOf(doc.metadata), version: doc.version, deleted: doc.deleted ?? false };
          const acknowledged = { name: t.body.name, status: t.body.status, metadata: t.body.metadata, version, deleted: false };
          if (JSON.stringify(found) !== JSON.stringify(acknowledged))
            lost.push(`${t.id}: acknowledged ${JSON.stringify(acknowledged)}, found ${JSON.stringify(found)}`);
        }
        // Every change's event: in `events`, or still in the outbox of the document.
        for (const change of t.changes) {
          const copied = (before.byChange.get(`${t.id}/${change.sequence}`) ?? []).some((e) => e.type === change.type);
          if (!copied) pendingInOutbox++;
          if (!copied && !pending.has(change.sequence)) lost.push(`${change.type} event of ${t.id} #${change.sequence}`);
        }
      }
      // Idempotency: core's record of every key, completed with the acknowledged answer (the endpoint's sealed: it
      // carries the secret), and every create's key bound to exactly one document (docs/idempotency-and-limits.md).
      const records = db.collection<Doc>("idempotency_keys");
      for (const k of keyed) {
        const record = await records.findOne({ _id: scope(k.key) });
        if (record?.completed !== true || record.answer === undefined)
          lost.push(`idempotency record ${k.key} (${record ? `completed ${record.completed}` : "missing"})`);
        else if ((k.path === "/v1/webhook_endpoints") !== (typeof record.answer.reply === "string"))
          lost.push(`recorded answer of ${k.key} (sealed only when it holds a secret)`);
      }
      // Each keyed create made the one document its acknowledged answer names (it commits with its key's record).
      for (const k of keyed.filter((k) => k.path === "/v1/resources")) {
        const { id, name } = JSON.parse(k.body) as { id: string; name: string };
        const named = await resources.find({ account: accountId, name }).toArray();
        if (named.length !== 1 || named[0]!._id !== id) lost.push(`the resource of ${k.key} (${named.length} documents named ${name})`);
      }
      if ((await db.collection<Doc>("webhook_endpoints").countDocuments({ _id: endpoint.id })) !== 1) lost.push(`endpoint ${endpoint.id}`);
      // Deliveries: an event copied before the kill that still waits for the endpoint has its delivery queued; one
      // that does not wait any more reached the receiver.
      let deliveriesQueued = 0;
      for (const e of before.found) {
        if (((e.pending_endpoints as string[] | undefined) ?? []).includes(endpoint.id)) {
          if ((await deliveries.countDocuments({ _id: `${e._id}:${endpoint.id}` })) === 1) deliveriesQueued++;
          else lost.push(`delivery of ${e._id}`);
        } else if (!delivered.has(String(e._id))) lost.push(`${e._id}: not waiting for the endpoint, never delivered`);
      }
      // The job: at least as far as the progress the API showed.
      const jobs = db.collection<Doc>("jobs");
      const storedJob = await jobs.findOne({ _id: job.id });
      if (!storedJob) lost.push(`job ${job.id}`);
      else if (storedJob.progress.processed < seenJob.progress.processed)
        lost.push(`job checkpoint: seen ${seenJob.progress.processed}, found ${storedJob.progress.processed}`);
      else if (!["running", "queued"].includes(seenJob.status) && storedJob.status !== seenJob.status)
        lost.push(`job status: seen ${seenJob.status}, found ${storedJob.status}`);
      const importedBefore = await resources.countDocuments({ account: accountId, name: /^durability-import-/ });
      console.log(
        `durability: after the restart, in the database: ${tracked.length - deleted.length} live resources, ${deleted.length} deleted ` +
          `(${await resources.countDocuments({ _id: { $in: deleted.map((t) => t.id) }, deleted: true })} tombstones), ${keyed.length} idempotency keys; ` +
          `of ${changes} change events ${changes - pendingInOutbox} in events and ${pendingInOutbox} not copied yet; ${before.found.length} events of ` +
          `the account in events, ` +
          `${deliveriesQueued} deliveries queued; job ${storedJob?.status} at ${storedJob?.progress.processed}/${IMPORT_ITEMS} (seen ` +
          `${seenJob.progress.processed}), ` +
          `${importedBefore} imported resources; acknowledged writes lost: ${lost.length}${lost.length > 0 ? `: ${lost.join("; ")}` : ""}`,
      );
      expect(lost, "acknowledged writes the restarted database does not hold").toEqual([]);

      // ---- The restarted stack finishes the work left: outboxes, deliveries, the job ----
      const restartedAt = Date.now();
      await startApps(database.uri);
      const finishedJob = await eventually(
        async () => {
          const found = await jobs.findOne({ _id: job.id });
          expect(found!.status).toBe("succeeded");
          expect(found!.pending_events).toEqual([]);
          expect(await resources.countDocuments({ account: accountId, "pending_events.0": { $exists: true } })).toBe(0);
          const after = await events.find({ account: accountId }, { projection: { pending_endpoints: 1 } }).toArray();
          expect(after.filter((e) => ((e.pending_endpoints as string[] | undefined) ?? []).length > 0)).toEqual([]);
          expect(after.filter((e) => !delivered.has(String(e._id)))).toEqual([]);
          return found!;
        },
        { timeoutMs: 240_000, intervalMs: 500 },
      );
      const settledAt = Date.now();

      // Exactly one event per acknowledged change, and per imported item; one job.succeeded.
      const after = await eventsOf();
      const duplicates = [...after.byChange.values()].filter((list) => list.length > 1);
      expect(duplicates, "two events for one change").toEqual([]);
      for (const t of tracked)
        for (const change of t.changes)
          expect(
            after.byChange.get(`${t.id}/${change.sequence}`)?.map((e) => e.type),
            `${t.id} #${change.sequence}`,
          ).toEqual([change.type]);
      const imported = await resources.find({ account: accountId, name: /^durability-import-/ }, { projection: { name: 1, version: 1 } }).toArray();
      expect(new Set(imported.map((r) => r.name)).size).toBe(IMPORT_ITEMS);
      expect(imported).toHaveLength(IMPORT_ITEMS);
      expect(imported.filter((r) => r.version !== 0)).toEqual([]);
      for (const r of imported)
        expect(
          after.byChange.get(`${r._id}/0`)?.map((e) => e.type),
          String(r._id),
        ).toEqual(["resource.created"]);
      const jobEvents = after.found.filter((e) => e.object.id === job.id);
      expect(jobEvents.map((e) => e.type)).toEqual(["job.succeeded"]);
      expect(after.found).toHaveLength(changes + IMPORT_ITEMS + 1);
      expect(finishedJob).toMatchObject({
        progress: { total: IMPORT_ITEMS, processed: IMPORT_ITEMS, failed: 0, skipped: 0 },
        result: { created: IMPORT_ITEMS },
      });
      expect(unverified).toBe(0);

      // Through the API: the acknowledged states, the deletions, and every key replays its first answer.
      for (const t of tracked) {
        const reply = await call("GET", `/v1/resources/${t.id}`);
        if (t.body === null) expect([reply.status, JSON.parse(reply.body).error.code], t.id).toEqual([404, "resource_missing"]);
        else expect([reply.status, JSON.parse(reply.body)], t.id).toEqual([200, t.body]);
      }
      for (const k of keyed) {
        const reply = await call("POST", k.path, k.payload, k.key);
        expect([reply.status, reply.headers["idempotent-replayed"], reply.body], k.key).toEqual([k.status, "true", k.body]);
      }
      // No request made a second resource: besides the import's, the account holds exactly the acknowledged ones
      // (the deleted ones as tombstones or not at all).
      const others = await resources.find({ account: accountId, name: { $not: /^durability-import-/ } }, { projection: { _id: 1 } }).toArray();
      const ids = new Set(others.map((r) => String(r._id)));
      expect(others).toHaveLength(ids.size);
      expect([...ids].filter((id) => !tracked.some((t) => t.id === id))).toEqual([]);
      expect(tracked.filter((t) => t.body !== null && !ids.has(t.id))).toEqual([]);
      const deliveredTwice = [...delivered.values()].filter((n) => n > 1).length;
      console.log(
        `durability: after the restarted stack settled: job succeeded (${finishedJob.progress.processed}/${IMPORT_ITEMS} items, each once, attempts ` +
          `${finishedJob.attempts}); ` +
          `${after.found.length} events (${changes} changes + ${IMPORT_ITEMS} imported + 1 job), 0 missing, 0 duplicated; ${delivered.size} events delivered ` +
          `(${deliveredTwice} more than once); ${keyed.length} keys replayed with the first answer; ${tracked.length - deleted.length} resources read ` +
          `back as acknowledged, ` +
          `${deleted.length} deleted ones 404; settled ${((settledAt - restartedAt) / 1000).toFixed(1)} s after the restart`,
      );
    },
    600_000,
  );
});
