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
//   - one pino request line per request at the stack's log level (LOG_LEVEL, default info), written asynchronously
//     like the stack's.
// It writes only collections of its own (C_KEYS, C_RESOURCES); it reads core's resources collection.
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";

export const C_KEYS = "bench_c_keys";
export const C_RESOURCES = "bench_c_resources";

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
  const keys = db.collection(C_KEYS);
  const resources = db.collection("resources");
  const created = db.collection(C_RESOURCES);
  await created.createIndex({ idempotency: 1 }, { unique: true, sparse: true, name: "idempotency_unique" });
  await created.createIndex({ account: 1, livemode: 1, _id: -1 }, { name: "tenant_order" });

  const app = express();
  app.disable("x-powered-by");
  app.disable("etag");
  app.set("query parser", "extended");
  app.use((req, res, next) => {
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
          account: res.locals.tenant?.account ?? null,
        },
        "request",
      ),
    );
    next();
  });
  // The key check: by hash, revoked and expiry.
  app.use(async (req, res, next) => {
    const secret = /^Bearer (\S+)$/.exec(req.headers.authorization ?? "")?.[1];
    if (!secret) return error(res, 401, "authentication_error", "api_key_missing", "No API key provided.");
    const key = await keys.findOne({ _id: hashOf(secret) });
    if (!key) return error(res, 401, "authentication_error", "api_key_invalid", "Invalid API key provided.");
    if (key.revoked_at !== null) return error(res, 401, "authentication_error", "api_key_revoked", "This API key has been revoked.");
    if (key.expires_at !== null && key.expires_at <= Date.now() / 1000) return error(res, 401, "authentication_error", "api_key_expired", "This API key has expired.");
    res.locals.tenant = { account: key.account, livemode: key.livemode };
    next();
  });
  const tenantOf = (res) => res.locals.tenant;
  const live = { deleted: { $exists: false } };
  const page = async (res, filter, limit, envelope) => {
    const docs = await resources
      .find({ ...tenantOf(res), ...filter, ...live }, { projection: { pending_events: 0 } })
      .sort({ _id: -1 })
      .limit(limit + 1)
      .toArray();
    const data = docs.slice(0, limit).map(render);
    res.type("application/json").send(JSON.stringify({ ...envelope(docs.length > limit, data), data }));
  };
  const metadataFilter = (k, v) => ({ metadata: { $elemMatch: { k, v } } });

  app.get("/v1/resources/search", async (req, res) => {
    // The clauses the bench sends: `field:'value'` joined by AND, on status and metadata['key'].
    const filter = {};
    for (const clause of String(req.query.query ?? "").split(" AND ")) {
      const m = /^(status|metadata\['([^']+)'\]):'([^']*)'$/.exec(clause.trim());
      if (!m) return error(res, 400, "invalid_request_error", "search_query_invalid", "Unsupported query.");
      if (m[1] === "status") filter.status = m[3];
      else Object.assign(filter, metadataFilter(m[2], m[3]));
    }
    await page(res, filter, Number(req.query.limit ?? 10), (hasMore, data) => ({
      object: "search_result",
      url: "/v1/resources/search",
      has_more: hasMore,
      next_page: hasMore ? Buffer.from(data.at(-1).id).toString("base64url") : null,
    }));
  });
  app.get("/v1/resources", async (req, res) => {
    const filter = {};
    if (typeof req.query.status === "string") filter.status = req.query.status;
    for (const [k, v] of Object.entries(req.query.metadata ?? {})) Object.assign(filter, metadataFilter(k, String(v)));
    await page(res, filter, Number(req.query.limit ?? 20), (hasMore) => ({ object: "list", url: "/v1/resources", has_more: hasMore }));
  });
  app.get("/v1/resources/:id", async (req, res) => {
    const doc = await resources.findOne({ _id: req.params.id }, { projection: { pending_events: 0 } });
    const { account, livemode } = tenantOf(res);
    if (!doc || doc.account !== account || doc.livemode !== livemode || doc.deleted !== undefined) {
      return error(res, 404, "invalid_request_error", "resource_missing", `No such resource: '${req.params.id}'`);
    }
    res.type("application/json").send(JSON.stringify(render(doc)));
  });
  app.post("/v1/resources", express.urlencoded({ extended: true, limit: "1mb" }), express.json({ limit: "1mb" }), async (req, res) => {
    const { name, status = "active", metadata = {} } = req.body ?? {};
    if (typeof name !== "string" || name.length === 0 || [...name].length > 200) {
      return error(res, 400, "invalid_request_error", "parameter_invalid", "Invalid name.");
    }
    const pairs = Object.entries(metadata).map(([k, v]) => ({ k, v: String(v) }));
    const { account, livemode } = tenantOf(res);
    const nowMs = Date.now();
    const doc = { _id: newId(nowMs), account, livemode, name, status, metadata: pairs, created: Math.floor(nowMs / 1000) };
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
      return error(res, 400, "idempotency_error", "idempotency_key_reused", "Keys for idempotent requests can only be used with the same parameters they were first used with.");
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
