import type { RequestHandler } from "express";
import { errorCatalogue } from "./errors.js";
import { API_VERSION } from "./http/request-id.js";
import { EVENT_OBJECT, EVENT_PAYLOADS, KEYLESS_ROUTES } from "./routes/index.js";
import type { EventPayload, KeylessRoute, Operation, ParamSpec } from "./engine/operation.js";
import { clientNameOf } from "./engine/client-names.js";
import { schemaRef as ref, type JsonSchema, type PublicObject } from "./schema/objects.js";

/**
 * The OpenAPI 3.1 description of the public API, built as data from the
 * gateway's own operation table (paths, methods, parameters with their
 * schemas, success objects) and error catalogue, so it cannot drift from what
 * the gateway does. Nothing here is about one kind of object: each route file
 * describes itself.
 */

type Schema = JsonSchema;

export const OPENAPI_PATH = "/v1/openapi.json";

/** How this document itself is described. */
const openApiRoute: KeylessRoute = {
  path: OPENAPI_PATH,
  operationId: "getOpenApi",
  summary: "This description",
  description: "No key needed.",
  responses: { "200": { description: "The OpenAPI 3.1 document.", schema: { type: "object" } } },
};

const COMMON_HEADERS = {
  "Request-Id": { $ref: "#/components/headers/Request-Id" },
  "Api-Version": { $ref: "#/components/headers/Api-Version" },
};

/** What a replayed answer adds (an answer recorded under an Idempotency-Key: a success, or an error from executing). */
const REPLAY_HEADERS = {
  "Idempotent-Replayed": { $ref: "#/components/headers/Idempotent-Replayed" },
  "Original-Request": { $ref: "#/components/headers/Original-Request" },
};

/** The key's rate limit (IETF draft "RateLimit header fields for HTTP"): on every answer to a request with a valid key. */
const RATE_LIMIT_HEADERS = {
  "RateLimit-Policy": { $ref: "#/components/headers/RateLimit-Policy" },
  RateLimit: { $ref: "#/components/headers/RateLimit" },
};

function jsonResponse(description: string, schema: Schema, extraHeaders: Record<string, unknown> = {}): Schema {
  return { description, headers: { ...COMMON_HEADERS, ...extraHeaders }, content: { "application/json": { schema } } };
}

/** Error statuses any authenticated operation may answer (bodies and encodings are checked for every verb). */
const ERROR_STATUSES: Record<string, string> = {
  "400": "Invalid request (parameters, encoding, Idempotency-Key reuse).",
  "401": "No valid API key.",
  "403": "The key may not do this, or the request came over plain HTTP.",
  "404": "No such object (in this account and mode).",
  "405": "A verb this path does not have (HEAD included); `Allow` lists the ones it has.",
  "409": "The same Idempotency-Key is still in flight.",
  "413": "Request body over 1 MiB (a file upload: over FILES_MAX_BYTES; a part: over 64 MiB).",
  "415": "Unsupported request content type.",
  "416": "A `Range` that starts at or past the file's end (with `Content-Range: bytes */<size>`).",
  "429": "Too many requests for this key, or from this address before a key is verified.",
  "500": "An unexpected error; the message leaks nothing.",
  "503": "MongoDB or the core is unreachable; nothing was half-written.",
};

function errorResponses(statuses: readonly string[] = Object.keys(ERROR_STATUSES)): Record<string, Schema> {
  return Object.fromEntries(statuses.map((status) => [status, { $ref: `#/components/responses/Error${status}` }]));
}

/** What a path that needs no key can still answer: plain HTTP, a wrong verb, the per-address limit. */
const KEYLESS_ERRORS = ["403", "405", "429"];

function pathOf(expressPath: string): string {
  return expressPath.replace(/:([A-Za-z_]+)/g, "{$1}");
}

/** A parameter that takes an object (metadata): sent in forms with bracket notation. */
function takesObject(spec: ParamSpec): boolean {
  const forms = [spec.schema, ...((spec.schema["oneOf"] as Schema[] | undefined) ?? []), ...((spec.schema["anyOf"] as Schema[] | undefined) ?? [])];
  return forms.some((form) => form["type"] === "object");
}

/** A parameter that takes a list (`types`, `ids`): sent in query strings as `name[]=a&name[]=b`. */
function takesList(spec: ParamSpec): boolean {
  return spec.schema["type"] === "array";
}

/**
 * A query parameter, declared so that a client generated from this document sends what the gateway reads
 * (Stripe bracket notation, CONTRACT.md section 1): an object as `deepObject` (`created[gte]=1700000000`,
 * `metadata[plan]=pro`; the default `form` style would send `gte=1700000000`, an unknown parameter), a list
 * under its bracketed name, repeated (`types[]=a&types[]=b`, the default `form` style with `explode`).
 */
function queryParameter(name: string, spec: ParamSpec): Schema {
  const described = { in: "query", required: spec.required ?? false, schema: spec.schema, ...(spec.example !== undefined ? { example: spec.example } : {}) };
  if (takesObject(spec)) return { name, ...described, style: "deepObject", explode: true };
  if (takesList(spec)) return { name: `${name}[]`, ...described, style: "form", explode: true };
  return { name, ...described };
}

function pathParameters(operation: Operation): Schema[] {
  const names = [...operation.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]!);
  return names.map((name) => {
    const spec = operation.pathParameters[name];
    if (!spec) throw new Error(`openapi: no description of path parameter '${name}' of ${operation.method} ${operation.path}`);
    const { description, ...schema } = spec.schema;
    return { name, in: "path", required: true, schema, description, example: spec.example };
  });
}

function requestBodyOf(operation: Operation): Schema {
  const entries = Object.entries(operation.parameters);
  const required = entries.filter(([, spec]) => spec.required).map(([name]) => name);
  const schema: Schema = {
    type: "object",
    additionalProperties: false,
    properties: Object.fromEntries(
      entries.map(([name, spec]) => [name, { ...spec.schema, ...(spec.example !== undefined ? { examples: [spec.example] } : {}) }]),
    ),
    ...(required.length > 0 ? { required } : {}),
  };
  const encoding = Object.fromEntries(entries.filter(([, spec]) => takesObject(spec)).map(([name]) => [name, { style: "deepObject", explode: true }]));
  return {
    required: required.length > 0,
    description: "Both encodings are accepted and mean the same; forms use Stripe bracket notation (`metadata[plan]=pro`).",
    content: {
      "application/json": { schema },
      "application/x-www-form-urlencoded": { schema, ...(Object.keys(encoding).length > 0 ? { encoding } : {}) },
    },
  };
}

/** The codes of the operation's own, and those of its kind of request: Idempotency-Key for POST, an unknown outcome for writes. */
function errorsOf(operation: Operation): string {
  const codes = [...operation.errors];
  if (operation.method === "POST") codes.push("idempotency_key_reused", "idempotency_key_in_use");
  if (operation.method !== "GET") codes.push("outcome_unknown");
  return codes.length === 0 ? "" : ` Its own error codes, besides those of every operation: ${codes.map((code) => `\`${code}\``).join(", ")}.`;
}

/** Whether the operation's success answer is a list envelope (`{"object": "list", ...}`). */
function answersList(operation: Operation): boolean {
  const properties = operation.success.object.schema["properties"] as Record<string, Schema> | undefined;
  return properties?.["object"]?.["const"] === "list";
}

/**
 * The pairs of parameters that may not be sent together (two cursors, `type` and `types`: 400), as their query names:
 * a rule a schema of separate query parameters cannot state, so generated clients read it from this extension.
 */
function exclusivePairs(operation: Operation): string[][] {
  const queryName = (name: string) => (operation.method === "GET" && operation.parameters[name] && takesList(operation.parameters[name]) ? `${name}[]` : name);
  return Object.entries(operation.parameters).flatMap(([name, spec]) => (spec.notWith ? [[queryName(name), queryName(spec.notWith)]] : []));
}

function operationObject(operation: Operation): Schema {
  const parameters = pathParameters(operation);
  let requestBody: Schema | undefined;
  if (operation.method === "POST") {
    parameters.push({ $ref: "#/components/parameters/IdempotencyKey" });
    const streamed = operation.stream?.requestBody;
    if (streamed) requestBody = { required: streamed.required, description: streamed.description, content: streamed.content };
    else if (!operation.stream) requestBody = requestBodyOf(operation);
  } else {
    for (const [name, spec] of Object.entries(operation.parameters)) parameters.push(queryParameter(name, spec));
  }
  const successHeaders = operation.method === "POST" ? { ...RATE_LIMIT_HEADERS, ...REPLAY_HEADERS } : RATE_LIMIT_HEADERS;
  const name = clientNameOf(operation.method, operation.path, answersList(operation), operation.clientMethod);
  const exclusive = exclusivePairs(operation);
  return {
    operationId: name.operationId,
    summary: operation.summary,
    description: `${operation.access ?? accessOf(operation)}${errorsOf(operation)}`,
    ...(operation.scope !== null ? { "x-scope": operation.scope } : {}),
    "x-rms-sdk": { namespace: name.namespace, method: name.method },
    ...(exclusive.length > 0 ? { "x-mutually-exclusive-parameters": exclusive } : {}),
    parameters,
    ...(requestBody ? { requestBody } : {}),
    responses: {
      ...successResponses(operation, successHeaders),
      ...errorResponses(),
    },
  };
}

/** Who may run an operation, as its description's first sentence. */
function accessOf(operation: Operation): string {
  if (operation.secretKeyOnly) return operation.orDashboardSession ? "Needs a secret key or a dashboard session's key." : "Needs a secret key.";
  return operation.scope === null ? "Any key of the account." : `Needs the \`${operation.scope}\` scope.`;
}

/** The success answers: the success object (and variants) as JSON, or a stream operation's own content. */
function successResponses(operation: Operation, successHeaders: Record<string, unknown>): Record<string, Schema> {
  const raw = operation.stream?.successContent;
  if (raw) {
    const headers = { ...COMMON_HEADERS, ...raw.headers };
    const answers: Record<string, Schema> = {
      [String(operation.success.status)]: { description: operation.success.description, headers, content: raw.content },
    };
    for (const [status, extra] of Object.entries(raw.extra ?? {})) {
      answers[status] = { description: extra.description, headers: { ...headers, ...extra.headers }, ...(status === "304" ? {} : { content: raw.content }) };
    }
    return answers;
  }
  return Object.fromEntries(
    [operation.success, ...operation.variants].map((answer) => [
      String(answer.status),
      {
        ...jsonResponse(answer.description, ref(answer.object.name), successHeaders),
        ...(answer.selectedBy ? { "x-rms-selected-by": answer.selectedBy } : {}),
      },
    ]),
  );
}

function keylessObject(route: KeylessRoute): Schema {
  const responses: Record<string, Schema> = {};
  for (const [status, answer] of Object.entries(route.responses)) {
    const schema = answer.object ? ref(answer.object.name) : (answer.schema ?? {});
    responses[status] = jsonResponse(answer.description, schema, answer.retryAfter ? { "Retry-After": { $ref: "#/components/headers/Retry-After" } } : {});
  }
  return {
    operationId: route.operationId,
    summary: route.summary,
    description: route.description,
    ...(route.client ? { "x-rms-sdk": route.client } : {}),
    security: [],
    parameters: [],
    responses: { ...responses, ...errorResponses(KEYLESS_ERRORS) },
  };
}

/** Every named object the described answers use, each once (a name used by two different objects is a bug). */
function objectSchemas(objects: readonly PublicObject<never>[]): Record<string, Schema> {
  const schemas: Record<string, Schema> = {};
  const seen = new Map<string, PublicObject<never>>();
  const add = (object: PublicObject<never>) => {
    const known = seen.get(object.name);
    if (known === object) return;
    if (known) throw new Error(`openapi: two different objects are named '${object.name}'`);
    seen.set(object.name, object);
    for (const used of object.uses) add(used);
    schemas[object.name] = object.schema;
  };
  for (const object of objects) add(object);
  return schemas;
}

/** `resource.created` -> `ResourceCreated`. */
const pascal = (type: string) =>
  type
    .split(/[._]/)
    .map((word) => word[0]!.toUpperCase() + word.slice(1))
    .join("");

/** The schema of one event type's payload: the event object with this `type` and this `data`. */
function eventSchema(event: EventPayload): Schema {
  const base = EVENT_OBJECT.schema;
  const objectSchema = event.object.schema as { properties?: Record<string, Schema> };
  const data: Schema = {
    type: "object",
    additionalProperties: false,
    required: ["object", ...(event.previousAttributes ? ["previous_attributes"] : []), ...(event.reasons ? ["reason"] : [])],
    properties: {
      object: ref(event.object.name),
      ...(event.previousAttributes
        ? {
            previous_attributes: {
              type: "object",
              additionalProperties: false,
              // The fields a change can touch, each with its old value.
              properties: Object.fromEntries(Object.entries(objectSchema.properties ?? {}).filter(([name]) => !["id", "object", "created"].includes(name))),
              description: "The old values of the changed fields only.",
            },
          }
        : {}),
      ...(event.reasons ? { reason: { type: "string", enum: [...event.reasons], description: "Why." } } : {}),
    },
  };
  const properties = base["properties"] as Record<string, Schema>;
  return {
    ...base,
    description: event.summary,
    properties: { ...properties, type: { type: "string", const: event.type }, data },
  };
}

/**
 * The `webhooks` section (OpenAPI 3.1): one entry per event type, the POST a receiver gets, with the Standard
 * Webhooks headers and the event as its body, so receivers generate their types from this document too.
 */
function webhooksOf(events: readonly EventPayload[]): Record<string, Schema> {
  return Object.fromEntries(
    events.map((event) => [
      event.type,
      {
        post: {
          operationId: `webhook${pascal(event.type)}`,
          summary: event.type,
          description:
            `${event.summary} Signed by the Standard Webhooks rules: verify \`webhook-signature\` over \`webhook-id.webhook-timestamp.body\` ` +
            "with any Standard Webhooks library (`v1`: HMAC-SHA256 with the endpoint's `whsec_` secret; `v1a`: Ed25519 with its `whpk_` public key).",
          security: [],
          parameters: [
            { $ref: "#/components/parameters/WebhookId" },
            { $ref: "#/components/parameters/WebhookTimestamp" },
            { $ref: "#/components/parameters/WebhookSignature" },
          ],
          requestBody: { required: true, content: { "application/json": { schema: ref(`${pascal(event.type)}Event`) } } },
          responses: {
            "200": { description: "Received: any 2xx within 15 seconds is success; anything else is retried with growing delays." },
            "410": { description: "Gone: the endpoint is disabled at once (a `webhook_endpoint.disabled` event tells the account's other endpoints)." },
          },
        },
      },
    ]),
  );
}

/** The Standard Webhooks headers of every delivery. */
const WEBHOOK_HEADERS: Record<string, Schema> = {
  WebhookId: {
    name: "webhook-id",
    in: "header",
    required: true,
    description: "The event id: the same on every attempt of the event, so a receiver can drop a repeat.",
    schema: { type: "string", pattern: "^evt_[0-9A-Za-z]+$" },
  },
  WebhookTimestamp: {
    name: "webhook-timestamp",
    in: "header",
    required: true,
    description: "Unix seconds of this attempt; a receiver refuses one too far from its clock (replays).",
    schema: { type: "string", pattern: "^[0-9]+$" },
  },
  WebhookSignature: {
    name: "webhook-signature",
    in: "header",
    required: true,
    description:
      "Space-separated signatures, one per valid secret or key (two during a rotation's grace): `v1,<base64 HMAC-SHA256>` or `v1a,<base64 Ed25519>`, " +
      "over `webhook-id.webhook-timestamp.body`.",
    schema: { type: "string", pattern: "^v1a?,[A-Za-z0-9+/=]+( v1a?,[A-Za-z0-9+/=]+)*$" },
  },
};

export interface OpenApiDocument {
  readonly openapi: string;
  readonly paths: Record<string, Record<string, Schema>>;
  readonly components: Record<string, Record<string, Schema>>;
  readonly [key: string]: unknown;
}

/** The whole document for the given operations and keyless routes. */
export function openApiDocument(
  operations: readonly Operation[],
  keyless: readonly KeylessRoute[] = KEYLESS_ROUTES,
  events: readonly EventPayload[] = EVENT_PAYLOADS,
): OpenApiDocument {
  const catalogue = errorCatalogue();
  const paths: Record<string, Record<string, Schema>> = {};
  const describe = (path: string, method: string, operation: Schema) => {
    paths[path] = { ...paths[path], [method]: operation };
  };
  for (const route of [...keyless, openApiRoute]) describe(route.path, "get", keylessObject(route));
  for (const operation of operations) describe(pathOf(operation.path), operation.method.toLowerCase(), operationObject(operation));
  const objects = [
    ...operations.flatMap((operation) => [operation.success, ...operation.variants].map((answer) => answer.object)),
    ...keyless.flatMap((route) => Object.values(route.responses).flatMap((answer) => (answer.object ? [answer.object] : []))),
    ...events.map((event) => event.object),
  ];
  const errorResponse = (status: string): Schema => {
    const headers: Record<string, unknown> = {
      "Stripe-Should-Retry": { $ref: "#/components/headers/Stripe-Should-Retry" },
      ...RATE_LIMIT_HEADERS,
      ...REPLAY_HEADERS,
    };
    if (status === "405") headers["Allow"] = { description: "The verbs this path has, e.g. `GET, POST`.", schema: { type: "string" }, required: true };
    if (status === "401") headers["WWW-Authenticate"] = { description: "`Bearer`.", schema: { type: "string" }, required: true };
    if (status === "429" || status === "503") headers["Retry-After"] = { $ref: "#/components/headers/Retry-After" };
    if (status === "416")
      headers["Content-Range"] = {
        description: "`bytes */<size>`: the file's size.",
        schema: { type: "string", pattern: "^bytes \\*/[0-9]+$" },
        required: true,
      };
    const codes = catalogue.filter((e) => String(e.status) === status).map((e) => `\`${e.code}\``);
    return jsonResponse(`${ERROR_STATUSES[status]!} Codes: ${codes.join(", ")}.`, ref("Error"), headers);
  };
  return {
    openapi: "3.1.0",
    info: {
      title: "Resource Management Service",
      version: API_VERSION,
      license: { name: "Proprietary", identifier: "LicenseRef-Proprietary" },
      description:
        "A Stripe-style REST API. Every path is under `/v1`, HTTPS only. Request bodies may be JSON or " +
        "`application/x-www-form-urlencoded` with bracket notation; both give byte-identical responses. " +
        "Authenticate with `Authorization: Bearer <key>` (or HTTP Basic with the key as user name, as `curl -u sk_...:` sends it). " +
        "Extensions on operations: `x-scope` (the key's scope it needs), `x-rms-sdk` (its namespace and method in the SDK, `@rms/sdk`), " +
        "`x-mutually-exclusive-parameters` (pairs refused together with 400) and, on a response, `x-rms-selected-by` (the boolean parameter that selects it).",
    },
    // Relative: the origin this document was fetched from (`npm start` serves it on https://localhost:8443).
    servers: [{ url: "/", description: "The origin serving this document." }],
    security: [{ bearerAuth: [] }],
    paths,
    webhooks: webhooksOf(events),
    components: {
      securitySchemes: {
        bearerAuth: { type: "http", scheme: "bearer", description: "An API key: `sk_`, `pk_` or `rk_` + `live_`/`test_` + secret." },
      },
      parameters: {
        IdempotencyKey: {
          name: "Idempotency-Key",
          in: "header",
          required: false,
          description: "Makes a POST safe to retry: a repeat with the same key and request returns the first response.",
          schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x20-\\x7e]+$" },
        },
        ...WEBHOOK_HEADERS,
      },
      headers: {
        "Request-Id": { description: "This request's id.", required: true, schema: { type: "string", pattern: "^req_[0-9A-Za-z]+$" } },
        "Api-Version": { description: "The API version.", required: true, schema: { type: "string", const: API_VERSION } },
        "Idempotent-Replayed": {
          description: "`true` on a replayed response: the first answer's status, body and headers again; only `Request-Id` is the replay's own.",
          schema: { type: "string", const: "true" },
        },
        "Original-Request": {
          description: "On a replayed response: the `Request-Id` of the request that produced it.",
          schema: { type: "string", pattern: "^req_[0-9A-Za-z]+$" },
        },
        "Retry-After": { description: "Seconds to wait before retrying.", required: true, schema: { type: "string", pattern: "^[0-9]+$" } },
        "RateLimit-Policy": {
          description:
            'The key\'s rate limit (IETF draft "RateLimit header fields for HTTP"): `"key";q=<requests>;w=1`, requests per one-second window. On every ' +
            "answer to a request with a valid key (the 429 too); not on answers refused before a key was verified.",
          schema: { type: "string", pattern: '^"key";q=[0-9]+;w=1$' },
        },
        RateLimit: {
          description:
            'What is left of the key\'s limit after this request: `"key";r=<requests left>;t=<seconds until the window resets>`, from the same token ' +
            "bucket as the limit itself (shared by every gateway when RATE_LIMIT_STORE=mongodb). On a 429, `r=0` and `t` equals `Retry-After`.",
          schema: { type: "string", pattern: '^"key";r=[0-9]+;t=[0-9]+$' },
        },
        "Stripe-Should-Retry": {
          description: "`true` when the same request may succeed if retried (429, 503, 409 `idempotency_key_in_use`), `false` when a retry cannot fix it.",
          required: true,
          schema: { type: "string", enum: ["true", "false"] },
        },
      },
      responses: Object.fromEntries(Object.keys(ERROR_STATUSES).map((status) => [`Error${status}`, errorResponse(status)])),
      schemas: {
        ...objectSchemas(objects),
        ...Object.fromEntries(events.map((event) => [`${pascal(event.type)}Event`, eventSchema(event)])),
        Error: {
          type: "object",
          additionalProperties: false,
          required: ["error"],
          properties: {
            error: {
              type: "object",
              additionalProperties: false,
              required: ["type", "code", "message", "request_id"],
              properties: {
                type: { type: "string", enum: [...new Set(catalogue.map((e) => e.type))] },
                code: { type: "string", enum: catalogue.map((e) => e.code) },
                message: { type: "string" },
                param: { type: "string", description: "The parameter at fault, when there is one." },
                request_id: { type: "string", pattern: "^req_[0-9A-Za-z]+$" },
              },
            },
          },
        },
      },
    },
  };
}

/** GET /v1/openapi.json, no key needed: the document, serialized once. */
export function openApiHandler(
  operations: readonly Operation[],
  keyless: readonly KeylessRoute[] = KEYLESS_ROUTES,
  events: readonly EventPayload[] = EVENT_PAYLOADS,
): RequestHandler {
  const body = JSON.stringify(openApiDocument(operations, keyless, events));
  return (_req, res) => {
    res.status(200).send(body);
  };
}
