// Baseline C of `npm run bench` (issue 22): what a user would write instead of gateway + gRPC + core, in one process:
// Express 5 and the `mongodb` driver over the same TLS, on the same database server.
//   - the key check: the presented key's SHA-256 looked up by `_id` in C's own key collection, refused when revoked
//     or past its expiry;
//   - GET /v1/resources/:id: the same read as core's (`findOne` by `_id` in core's resources collection, the
//     outbox left out, tenant and tombstone checked), the same JSON;
//   - GET /v1/resources?limit=20[&status=..&metadata[k]=v]: one page from the same index, `limit + 1` read, the same
//     list envelope;
//   - GET /v1/resources/search?query=..: the `field:'value'` clauses joined by AND (what the bench sends), as one
//     query on the same index, the same envelope;
//   - POST /v1/resources with Idempotency-Key: exactly once by a unique index on the key on the created document,
//     which also holds the request's hash and the response; a repeat replays it (`Idempotent-Replayed`), another
//     request under the key is 400 `idempotency_key_reused`;
//   - POST /own-record/v1/resources: the same create in the stack's shape, its key's record in a collection of its
//     own (C_RECORDS): the lock's insert beside the key check, then one transaction { insert the resource ; complete
//     the record }; the bench's row c_post_own_record;
//   - one pino request line per request at the stack's log level (LOG_LEVEL, default info), written asynchronously
//     like the stack's.
// It writes only collections of its own (C_KEYS, C_RESOURCES, C_RECORDS); it reads core's resources collection.
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";

export const C_KEYS = "bench_c_keys";
export const C_RESOURCES = "bench_c_resources";
/** The key records of C's create in the stack's shape (`/own-record/v1/resources`). */
export const C_RECORDS = "bench_c_records";

const hashOf = (secret) => createHash("sha256").update(secret).digest("hex");

/** The key document C finds for `secret`: its hash is the `_id`. */
export function cKeyDocument(secret, tenant) {
  return { _id: hashOf(secret), account: tenant.accountId, livemode: tenant.livemode, revoked_at: null, expires_at: null };
}

const ID_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/** `res_` + 8 characters of time + 15 random ones (ids sort by creation, as the stack's do). */
function newId(nowMs) {
  let time = "";
  for (let i = 0, rest = nowMs; i < 8; i++, rest = Math.floor(rest / 62)) time = ID_ALPHABET[rest % 62] + time;
  const random = randomBytes(15);
  let tail = "";
  for (const byte of random) tail += ID_ALPHABET[byte % 62];
  return `res_${time}${tail}`;
}

const render = (doc) => {
  const metadata = {};
  for (const { k, v } of doc.metadata) metadata[k] = v;
  return { id: doc._id, object: "resource", name: doc.name, status: doc.status, metadata, created: doc.created };
};

/** The key a request presents (`Authorization: Bearer <key>`), or undefined. */
export const bearerOf = (req) => /^Bearer (\S+)$/.exec(req.headers.authorization ?? "")?.[1];

/** The refusals of C's key check, as the stack words them. */
const KEY_REFUSALS = {
  missing: { code: "api_key_missing", message: "No API key provided." },
  invalid: { code: "api_key_invalid", message: "Invalid API key provided." },
  revoked: { code: "api_key_revoked", message: "This API key has been revoked." },
  expired: { code: "api_key_expired", message: "This API key has expired." },
};

/**
 * C's reads, shared with floor E (baseline-e.mjs) so both run the very same commands: the key check (one `findOne`
 * by the key's hash), a resource by `_id`, and a page from the same index.
 */
export function cReads(db) {
  const keys = db.collection(C_KEYS);
  const resources = db.collection("resources");
  const live = { deleted: { $exists: false } };
  return {
    /** `{ tenant }` for a usable key, `{ refused }` otherwise. */
    async checkKey(secret) {
      if (!secret) return { refused: KEY_REFUSALS.missing };
      const key = await keys.findOne({ _id: hashOf(secret) });
      if (!key) return { refused: KEY_REFUSALS.invalid };
      if (key.revoked_at !== null) return { refused: KEY_REFUSALS.revoked };
      if (key.expires_at !== null && key.expires_at <= Date.now() / 1000) return { refused: KEY_REFUSALS.expired };
      return { tenant: { account: key.account, livemode: key.livemode } };
    },
    /** The public object of the tenant's live resource `id`, or null. */
    async get(tenant, id) {
      const doc = await resources.findOne({ _id: id }, { projection: { pending_events: 0 } });
      if (!doc || doc.account !== tenant.account || doc.livemode !== tenant.livemode || doc.deleted !== undefined) return null;
      return render(doc);
    },
    /** One page, newest first: `limit + 1` read. */
    async page(tenant, filter, limit) {
      const docs = await resources
        .find({ account: tenant.account, livemode: tenant.livemode, ...filter, ...live }, { projection: { pending_events: 0 } })
        .sort({ _id: -1 })
        .limit(limit + 1)
        .toArray();
      return { data: docs.slice(0, limit).map(render), hasMore: docs.length > limit };
    },
  };
}

const metadataFilter = (k, v) => ({ metadata: { $elemMatch: { k, v } } });

/** A list's filter from its `status` and `metadata[k]=v` parameters. */
export function listFilter(status, metadata) {
  const filter = {};
  if (typeof status === "string") filter.status = status;
  for (const [k, v] of Object.entries(metadata ?? {})) Object.assign(filter, metadataFilter(k, String(v)));
  return filter;
}

/** A search's filter from the clauses the bench sends (`field:'value'` joined by AND, on status and metadata['key']); null for another query. */
export function searchFilter(query) {
  const filter = {};
  for (const clause of query.split(" AND ")) {
    const m = /^(status|metadata\['([^']+)'\]):'([^']*)'$/.exec(clause.trim());
    if (!m) return null;
    if (m[1] === "status") filter.status = m[3];
    else Object.assign(filter, metadataFilter(m[2], m[3]));
  }
  return filter;
}

/** A create's parameters, or null when its name is not acceptable. */
function parseCreate(body) {
  const { name, status = "active", metadata = {} } = body ?? {};
  if (typeof name !== "string" || name.length === 0 || [...name].length > 200) return null;
  return { name, status, pairs: Object.entries(metadata).map(([k, v]) => ({ k, v: String(v) })) };
}

const newResource = ({ account, livemode }, { name, status, pairs }, nowMs) => ({
  _id: newId(nowMs),
  account,
  livemode,
  name,
  status,
  metadata: pairs,
  created: Math.floor(nowMs / 1000),
});

/**
 * C's request id and its one pino line per request, written when the answer is sent (floor E writes the same):
 * `accountOf(res)` names the account the request acted for.
 */
export function requestLine(logger, accountOf) {
  return (req, res) => {
    const started = process.hrtime.bigint();
    const requestId = `req_${randomBytes(12).toString("base64url")}`;
    res.setHeader("Request-Id", requestId);
    res.on("finish", () =>
      logger.info(
        {
          request_id: requestId,
          method: req.method,
          path: req.path,
          status: res.statusCode,
          duration_ms: Number((process.hrtime.bigint() - started) / 1_000_000n),
          account: accountOf(res),
        },
        "request",
      ),
    );
  };
}

const error = (res, status, type, code, message) =>
  res
    .status(status)
    .type("application/json")
    .send(JSON.stringify({ error: { type, code, message, request_id: res.getHeader("Request-Id") } }));

export async function baselineC(port, certFile, keyFile, mongoUri, databaseName) {
  const { default: express } = await import("express");
  const { createServer } = await import("node:https");
  const { MongoClient } = await import("mongodb");
  const { default: pino } = await import("pino");
  const logger = pino({ level: process.env.LOG_LEVEL ?? "info", base: { service: "baseline-c" } }, pino.destination({ sync: false }));
  // The same durability as the stack's clients: majority, journaled, reads from the primary.
  const client = await new MongoClient(mongoUri, { writeConcern: { w: "majority", journal: true }, retryWrites: true, readPreference: "primary" }).connect();
  const db = client.db(databaseName);
  const created = db.collection(C_RESOURCES);
  await created.createIndex({ idempotency: 1 }, { unique: true, sparse: true, name: "idempotency_unique" });
  await created.createIndex({ account: 1, livemode: 1, _id: -1 }, { name: "tenant_order" });

  const app = express();
  app.disable("x-powered-by");
  app.disable("etag");
  app.set("query parser", "extended");
  const line = requestLine(logger, (res) => res.locals.tenant?.account ?? null);
  app.use((req, res, next) => {
    line(req, res);
    next();
  });
  const reads = cReads(db);
  const bodyParsers = [express.urlencoded({ extended: true, limit: "1mb" }), express.json({ limit: "1mb" })];
  const records = db.collection(C_RECORDS);
  await records.createIndex({ expires_at: 1 }, { name: "expires_at", expireAfterSeconds: 0 });
  // The keyed create in the stack's shape (bench row c_post_own_record), before the key check below: it runs its own
  // beside the lock, as core does. The lock is an insert of the key's record (unique `_id`, scoped by the presented
  // key's hash so it needs no tenant first); then one transaction inserts the resource and completes the record with
  // the answer, and its commit (majority, journaled) makes both durable. A repeat finds the record: its answer, 400
  // under other parameters, 409 while the lock is held.
  app.post("/own-record/v1/resources", ...bodyParsers, async (req, res) => {
    const secret = bearerOf(req);
    const key = req.headers["idempotency-key"];
    const parsed = parseCreate(req.body);
    if (!parsed) return error(res, 400, "invalid_request_error", "parameter_invalid", "Invalid name.");
    if (typeof key !== "string" || !secret) return error(res, 400, "invalid_request_error", "parameter_missing", "An Idempotency-Key and a key are needed.");
    const _id = `${hashOf(secret)}/${key}`;
    const requestHash = hashOf(JSON.stringify(parsed));
    const nowMs = Date.now();
    const lock = records
      .insertOne({ _id, request_hash: requestHash, completed: false, locked_until: new Date(nowMs + 15_000), expires_at: new Date(nowMs + 24 * 3600_000) })
      .then(
        () => true,
        (cause) => {
          if (cause?.code !== 11000) throw cause;
          return false;
        },
      );
    const [checked, locked] = await Promise.all([reads.checkKey(secret), lock]);
    if (checked.refused) {
      if (locked) await records.deleteOne({ _id, completed: false });
      return error(res, 401, "authentication_error", checked.refused.code, checked.refused.message);
    }
    if (!locked) {
      const first = await records.findOne({ _id });
      if (first && first.request_hash !== requestHash)
        return error(
          res,
          400,
          "idempotency_error",
          "idempotency_key_reused",
          "Keys for idempotent requests can only be used with the same parameters they were first used with.",
        );
      if (!first?.completed) return error(res, 409, "idempotency_error", "idempotency_key_in_use", "Try again later.");
      res.setHeader("Idempotent-Replayed", "true");
      res.setHeader("Original-Request", first.answer.request_id);
      return res.status(first.answer.status).type("application/json").send(first.answer.body);
    }
    const doc = newResource(checked.tenant, parsed, nowMs);
    const body = JSON.stringify(render(doc));
    const session = client.startSession();
    try {
      session.startTransaction();
      await created.insertOne(doc, { session });
      await records.updateOne(
        { _id, completed: false },
        { $set: { completed: true, answer: { status: 201, body, request_id: res.getHeader("Request-Id") } } },
        { session },
      );
      await session.commitTransaction();
    } catch (cause) {
      if (session.inTransaction()) await session.abortTransaction().catch(() => undefined);
      await records.deleteOne({ _id, completed: false }).catch(() => undefined);
      throw cause;
    } finally {
      void session.endSession();
    }
    res.status(201).type("application/json").send(body);
  });
  // The key check: by hash, revoked and expiry.
  app.use(async (req, res, next) => {
    const checked = await reads.checkKey(bearerOf(req));
    if (checked.refused) return error(res, 401, "authentication_error", checked.refused.code, checked.refused.message);
    res.locals.tenant = checked.tenant;
    next();
  });
  const tenantOf = (res) => res.locals.tenant;
  const page = async (res, filter, limit, envelope) => {
    const { data, hasMore } = await reads.page(tenantOf(res), filter, limit);
    res.type("application/json").send(JSON.stringify({ ...envelope(hasMore, data), data }));
  };
  app.get("/v1/resources/search", async (req, res) => {
    const filter = searchFilter(String(req.query.query ?? ""));
    if (!filter) return error(res, 400, "invalid_request_error", "search_query_invalid", "Unsupported query.");
    await page(res, filter, Number(req.query.limit ?? 10), (hasMore, data) => ({
      object: "search_result",
      url: "/v1/resources/search",
      has_more: hasMore,
      next_page: hasMore ? Buffer.from(data.at(-1).id).toString("base64url") : null,
    }));
  });
  app.get("/v1/resources", async (req, res) => {
    const filter = listFilter(req.query.status, req.query.metadata);
    await page(res, filter, Number(req.query.limit ?? 20), (hasMore) => ({ object: "list", url: "/v1/resources", has_more: hasMore }));
  });
  app.get("/v1/resources/:id", async (req, res) => {
    const resource = await reads.get(tenantOf(res), req.params.id);
    if (!resource) return error(res, 404, "invalid_request_error", "resource_missing", `No such resource: '${req.params.id}'`);
    res.type("application/json").send(JSON.stringify(resource));
  });
  app.post("/v1/resources", ...bodyParsers, async (req, res) => {
    const parsed = parseCreate(req.body);
    if (!parsed) return error(res, 400, "invalid_request_error", "parameter_invalid", "Invalid name.");
    const { account, livemode } = tenantOf(res);
    const doc = newResource(tenantOf(res), parsed, Date.now());
    const { name, status, pairs } = parsed;
    const body = JSON.stringify(render(doc));
    const key = req.headers["idempotency-key"];
    if (typeof key !== "string") {
      await created.insertOne(doc);
      return res.status(201).type("application/json").send(body);
    }
    const idempotency = `${account}/${livemode ? "live" : "test"}/${key}`;
    const requestHash = hashOf(JSON.stringify([name, status, pairs]));
    try {
      await created.insertOne({ ...doc, idempotency, request_hash: requestHash, answer: { status: 201, body, request_id: res.getHeader("Request-Id") } });
      return res.status(201).type("application/json").send(body);
    } catch (cause) {
      if (cause?.code !== 11000) throw cause;
    }
    const first = await created.findOne({ idempotency });
    if (!first) return error(res, 409, "idempotency_error", "idempotency_key_in_use", "Try again later.");
    if (first.request_hash !== requestHash)
      return error(
        res,
        400,
        "idempotency_error",
        "idempotency_key_reused",
        "Keys for idempotent requests can only be used with the same parameters they were first used with.",
      );
    res.setHeader("Idempotent-Replayed", "true");
    res.setHeader("Original-Request", first.answer.request_id);
    res.status(first.answer.status).type("application/json").send(first.answer.body);
  });
  app.use((cause, _req, res, _next) => {
    logger.error({ err: cause?.message }, "request failed");
    error(res, 500, "api_error", "internal_error", "An internal error occurred.");
  });
  createServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, app).listen(Number(port), "127.0.0.1", () => process.send?.("ready"));
}
