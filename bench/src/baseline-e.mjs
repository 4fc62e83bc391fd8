// Floor E of `npm run bench` (issue 30, item 3): the stack's shape with nothing of the stack's own in it. An Express 5
// front over the same TLS calls a grpc-js server in another process (the real rms.v1.ResourceService proto, the same
// channel and server options as the gateway's and core's), which runs C's very commands with the driver (cReads of
// baseline-c.mjs): the presented key's check beside the read, as core runs a read beside its key check.
//   - GET /v1/resources/:id: GetResource, answered as a Resource message, rendered to JSON by the front (as the
//     gateway renders a retrieve);
//   - GET /v1/resources?limit=20[&status=..&metadata[k]=v] and GET /v1/resources/search?query=..: ListResources and
//     SearchResources asked `as_json`, the page's JSON text put into the envelope as it is (as the gateway does);
//   - one pino request line per request in the front, as C's.
// The front learns a key's tenant once (C's key check, then kept: the gateway's principal cache) and sends the
// presented key in each call's metadata. Nothing else: no request log, metrics, deadline budget, rate limit, scope or
// parameter checks. So E is what the two processes of the design card cost by themselves, and the stack's rows
// against E are what the stack adds on top of that shape.
import { readFileSync } from "node:fs";
import { bearerOf, cReads, listFilter, requestLine, searchFilter } from "./baseline-c.mjs";

const PRESENTED_KEY = "x-presented-key";

/** The gRPC server of floor E: C's key check beside C's read, on the database of the stack. */
export async function floorCore(port, mongoUri, databaseName) {
  const { Server, ServerCredentials, status: GrpcStatus } = await import("@grpc/grpc-js");
  const { RESOURCE_STATUS, ResourceService, addService, HOP_SERVER_OPTIONS, RpcError } = await import("@rms/proto");
  const { MongoClient } = await import("mongodb");
  const client = await new MongoClient(mongoUri, { writeConcern: { w: "majority", journal: true }, readPreference: "primary" }).connect();
  const reads = cReads(client.db(databaseName));
  const tenantOf = (request) => ({ account: request.tenant.accountId, livemode: request.tenant.livemode });
  /** The read beside the key check; the read's result only for a key of the request's tenant. */
  const checked = async (context, request, read) => {
    const [key, result] = await Promise.all([reads.checkKey(context.metadata.get(PRESENTED_KEY)[0]), read(tenantOf(request))]);
    if (key.refused || key.tenant.account !== request.tenant.accountId)
      throw new RpcError(GrpcStatus.UNAUTHENTICATED, { type: "authentication_error", code: "api_key_invalid", message: "Invalid API key provided." });
    return result;
  };
  const asMessage = (resource) => ({
    id: resource.id,
    name: resource.name,
    status: RESOURCE_STATUS.valueOf(resource.status),
    metadata: Object.entries(resource.metadata).map(([key, value]) => ({ key, value })),
    created: BigInt(resource.created),
  });
  const impl = {};
  for (const method of ResourceService.methods) {
    impl[method.localName] = async () => {
      throw new RpcError(GrpcStatus.UNIMPLEMENTED, { type: "api_error", code: "internal_error", message: "not in floor E" });
    };
  }
  impl.getResource = async (request, context) => {
    const resource = await checked(context, request, (tenant) => reads.get(tenant, request.id));
    if (!resource)
      throw new RpcError(GrpcStatus.NOT_FOUND, { type: "invalid_request_error", code: "resource_missing", message: `No such resource: '${request.id}'` });
    return { resource: asMessage(resource) };
  };
  impl.listResources = async (request, context) => {
    const filter = listFilter(
      RESOURCE_STATUS.nameOf(request.filter?.status[0] ?? 0),
      Object.fromEntries((request.filter?.metadata ?? []).map((m) => [m.key, m.value])),
    );
    const { data, hasMore } = await checked(context, request, (tenant) => reads.page(tenant, filter, request.limit || 20));
    return { dataJson: JSON.stringify(data), hasMore };
  };
  impl.searchResources = async (request, context) => {
    const filter = searchFilter(request.query);
    if (!filter)
      throw new RpcError(GrpcStatus.INVALID_ARGUMENT, { type: "invalid_request_error", code: "search_query_invalid", message: "Unsupported query." });
    const { data, hasMore } = await checked(context, request, (tenant) => reads.page(tenant, filter, request.limit || 10));
    return { dataJson: JSON.stringify(data), hasMore, nextPage: hasMore ? Buffer.from(data.at(-1).id).toString("base64url") : "" };
  };
  const server = new Server({ ...HOP_SERVER_OPTIONS });
  addService(server, ResourceService, impl);
  server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (error) => {
    if (error) throw error;
    process.send?.("ready");
  });
}

/** The HTTPS front of floor E: the request line, the bearer key, one call to floorCore, the answer. */
export async function baselineE(port, certFile, keyFile, coreAddress, mongoUri, databaseName) {
  const { default: express } = await import("express");
  const { createServer } = await import("node:https");
  const { default: pino } = await import("pino");
  const { RESOURCE_STATUS, ResourceService, createClient } = await import("@rms/proto");
  const logger = pino({ level: process.env.LOG_LEVEL ?? "info", base: { service: "baseline-e" } }, pino.destination({ sync: false }));
  const { MongoClient } = await import("mongodb");
  const core = createClient(ResourceService, coreAddress, { timeoutMs: 10_000 });
  const reads = cReads((await new MongoClient(mongoUri).connect()).db(databaseName));
  /** Each key's tenant, learnt on its first request. */
  const principals = new Map();
  const app = express();
  app.disable("x-powered-by");
  app.disable("etag");
  app.set("query parser", "extended");
  const line = requestLine(logger, (res) => res.locals.tenant?.accountId ?? null);
  app.use(async (req, res, next) => {
    line(req, res);
    const secret = bearerOf(req);
    if (!secret) return fail(res, { code: "api_key_missing", message: "No API key provided." }, 401);
    if (!principals.has(secret)) {
      const checked = await reads.checkKey(secret);
      if (checked.refused) return fail(res, checked.refused, 401);
      principals.set(secret, { accountId: checked.tenant.account, livemode: checked.tenant.livemode });
    }
    res.locals.tenant = principals.get(secret);
    res.locals.call = { metadata: { [PRESENTED_KEY]: secret } };
    next();
  });
  const fail = (res, cause, status = httpStatus(cause)) =>
    res
      .status(status)
      .type("application/json")
      .send(JSON.stringify({ error: { code: cause.code ?? "internal_error", message: cause.message, request_id: res.getHeader("Request-Id") } }));
  const httpStatus = (cause) => ({ resource_missing: 404, api_key_invalid: 401, search_query_invalid: 400 })[cause.code] ?? 500;
  const page = (res, envelope, reply) => res.type("application/json").send(`${JSON.stringify(envelope(reply)).slice(0, -1)},"data":${reply.dataJson}}`);

  app.get("/v1/resources/search", async (req, res) => {
    try {
      const reply = await core.searchResources(
        { tenant: res.locals.tenant, query: String(req.query.query ?? ""), limit: Number(req.query.limit ?? 10), asJson: true },
        res.locals.call,
      );
      page(res, (r) => ({ object: "search_result", url: "/v1/resources/search", has_more: r.hasMore, next_page: r.hasMore ? r.nextPage : null }), reply);
    } catch (cause) {
      fail(res, cause);
    }
  });
  app.get("/v1/resources", async (req, res) => {
    const status = typeof req.query.status === "string" ? [RESOURCE_STATUS.valueOf(req.query.status)] : [];
    const metadata = Object.entries(req.query.metadata ?? {}).map(([key, value]) => ({ key, value: String(value) }));
    try {
      const reply = await core.listResources(
        { tenant: res.locals.tenant, limit: Number(req.query.limit ?? 20), filter: { status, metadata }, asJson: true },
        res.locals.call,
      );
      page(res, (r) => ({ object: "list", url: "/v1/resources", has_more: r.hasMore }), reply);
    } catch (cause) {
      fail(res, cause);
    }
  });
  app.get("/v1/resources/:id", async (req, res) => {
    try {
      const { resource } = await core.getResource({ tenant: res.locals.tenant, id: req.params.id }, res.locals.call);
      const metadata = Object.create(null);
      for (const { key, value } of resource.metadata) metadata[key] = value;
      const status = RESOURCE_STATUS.nameOf(resource.status);
      res
        .type("application/json")
        .send(JSON.stringify({ id: resource.id, object: "resource", name: resource.name, status, metadata, created: Number(resource.created) }));
    } catch (cause) {
      fail(res, cause);
    }
  });
  createServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, app).listen(Number(port), "127.0.0.1", () => process.send?.("ready"));
}
