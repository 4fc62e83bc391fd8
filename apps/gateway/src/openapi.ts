import type { RequestHandler } from "express";
import { errorCatalogue } from "./errors.js";
import { API_VERSION } from "./http/request-id.js";
import type { Operation } from "./routes/operation.js";
import { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX } from "./routes/resources.list.js";
import { STATUS_NAMES } from "./routes/resources.render.js";

/**
 * The OpenAPI 3.1 description of the public API, built as data from the
 * gateway's own operation table (paths, methods, accepted parameters) and
 * error catalogue, so it cannot drift from what the gateway does.
 */

type Schema = Record<string, unknown>;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const RESOURCE_ID = { type: "string", pattern: "^res_[0-9A-Za-z]{22}$", description: "A resource id: `res_` and an opaque suffix." };
/** A cursor is a well-formed resource id (that resource may since have been deleted); an empty string counts as absent. */
const CURSOR = { type: "string", pattern: "^(res_[0-9A-Za-z]{22})?$" };
const STATUS = { type: "string", enum: [...STATUS_NAMES] };

/** Request metadata: an object of at most 50 keys (key 1-40 characters, no brackets) to strings (numbers and booleans are taken in string form), or `""`. */
function metadataParam(update: boolean): Schema {
  return {
    oneOf: [
      {
        type: "object",
        maxProperties: 50,
        propertyNames: { minLength: 1, maxLength: 40, pattern: "^[^\\[\\]]*$" },
        additionalProperties: { type: ["string", "number", "boolean"], maxLength: 500 },
        description: update ? "Keys to set; a key set to `\"\"` is removed. Merged into the existing metadata." : "Key-value pairs to attach.",
      },
      { type: "string", const: "", description: update ? "Removes every key." : "No metadata." },
    ],
  };
}

/** The schema of every parameter an operation may accept, by name. */
const PARAMETERS: Record<string, { schema: Schema; description: string }> = {
  name: { schema: { type: "string", minLength: 1, maxLength: 200 }, description: "1 to 200 characters (Unicode code points), kept as given." },
  status: { schema: STATUS, description: "`active` (default on create), `paused` or `archived`." },
  metadata: { schema: {}, description: "Metadata (see the schema)." },
  limit: {
    schema: { type: "integer", minimum: 1, maximum: LIST_LIMIT_MAX, default: LIST_LIMIT_DEFAULT },
    description: `Page size, 1 to ${LIST_LIMIT_MAX}; default ${LIST_LIMIT_DEFAULT}.`,
  },
  starting_after: { schema: CURSOR, description: "Cursor: the page after this resource id (older). Not together with `ending_before` (400)." },
  ending_before: { schema: CURSOR, description: "Cursor: the page before this resource id (newer). Not together with `starting_after` (400)." },
};

function parameterSchema(operation: Operation, name: string): Schema {
  if (name === "metadata") return metadataParam(operation.path.includes(":"));
  const known = PARAMETERS[name];
  if (!known) throw new Error(`openapi: no schema for parameter '${name}' of ${operation.method} ${operation.path}`);
  return { ...known.schema, description: known.description };
}

/** What each operation answers on success. */
function successOf(operation: Operation): [string, Schema] {
  const key = `${operation.method} ${operation.path}`;
  switch (key) {
    case "GET /v1/resources":
      return ["200", { description: "One page of resources, newest first.", schema: ref("ResourceList") }];
    case "POST /v1/resources":
      return ["201", { description: "The created resource.", schema: ref("Resource") }];
    case "GET /v1/resources/:id":
      return ["200", { description: "The resource.", schema: ref("Resource") }];
    case "POST /v1/resources/:id":
      return ["200", { description: "The updated resource.", schema: ref("Resource") }];
    case "DELETE /v1/resources/:id":
      return ["200", { description: "The deletion result.", schema: ref("DeletedResource") }];
    default:
      throw new Error(`openapi: no response described for ${key}`);
  }
}

const COMMON_HEADERS = {
  "Request-Id": { $ref: "#/components/headers/Request-Id" },
  "Api-Version": { $ref: "#/components/headers/Api-Version" },
};

function jsonResponse(description: string, schema: Schema, extraHeaders: Record<string, unknown> = {}): Schema {
  return { description, headers: { ...COMMON_HEADERS, ...extraHeaders }, content: { "application/json": { schema } } };
}

/** Error statuses any authenticated operation may answer (bodies and encodings are checked for every verb). */
const ERROR_STATUSES: Record<string, string> = {
  "400": "Invalid request (parameters, encoding, Idempotency-Key reuse).",
  "401": "No valid API key.",
  "403": "The key may not do this, or the request came over plain HTTP.",
  "404": "No such resource (in this account and mode).",
  "405": "A verb this path does not have (HEAD included); `Allow` lists the ones it has.",
  "409": "The same Idempotency-Key is still in flight.",
  "413": "Request body over 1 MiB.",
  "415": "Unsupported request content type.",
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

function operationObject(operation: Operation): Schema {
  const pathParams = [...operation.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]!);
  const parameters: Schema[] = pathParams.map((name) => ({ name, in: "path", required: true, schema: { type: "string" }, description: "The resource id." }));
  let requestBody: Schema | undefined;
  if (operation.method === "POST") {
    parameters.push({ $ref: "#/components/parameters/IdempotencyKey" });
    const required = operation.path.includes(":") ? [] : ["name"];
    const schema: Schema = {
      type: "object",
      additionalProperties: false,
      properties: Object.fromEntries(operation.params.map((name) => [name, parameterSchema(operation, name)])),
      ...(required.length > 0 ? { required } : {}),
    };
    requestBody = {
      required: required.length > 0,
      description: "Both encodings are accepted and mean the same; forms use Stripe bracket notation (`metadata[plan]=pro`).",
      content: {
        "application/json": { schema },
        "application/x-www-form-urlencoded": { schema, encoding: { metadata: { style: "deepObject", explode: true } } },
      },
    };
  } else {
    for (const name of operation.params) {
      parameters.push({ name, in: "query", required: false, schema: parameterSchema(operation, name) });
    }
  }
  const [status, success] = successOf(operation);
  const successHeaders = operation.method === "POST" ? { "Idempotent-Replayed": { $ref: "#/components/headers/Idempotent-Replayed" } } : {};
  return {
    operationId: `${operation.method.toLowerCase()}${pathOf(operation.path).replace(/[{}]/g, "").split("/").filter(Boolean).slice(1).map((s) => s[0]!.toUpperCase() + s.slice(1)).join("")}`,
    summary: operation.summary,
    description: `Needs the \`${operation.scope}\` scope.`,
    "x-scope": operation.scope,
    parameters,
    ...(requestBody ? { requestBody } : {}),
    responses: { [status]: jsonResponse(success["description"] as string, success["schema"] as Schema, successHeaders), ...errorResponses() },
  };
}

export interface OpenApiDocument {
  readonly openapi: string;
  readonly paths: Record<string, Record<string, Schema>>;
  readonly components: Record<string, Record<string, Schema>>;
  readonly [key: string]: unknown;
}

export const OPENAPI_PATH = "/v1/openapi.json";

/** The whole document for the given operations. */
export function openApiDocument(operations: readonly Operation[]): OpenApiDocument {
  const catalogue = errorCatalogue();
  const paths: Record<string, Record<string, Schema>> = {
    "/v1/status": {
      get: {
        operationId: "getStatus",
        summary: "Service status",
        description: "No key needed. `degraded` (503) while MongoDB or the core is unreachable.",
        security: [],
        parameters: [],
        responses: {
          "200": jsonResponse("Operational.", ref("Status")),
          "503": jsonResponse("Degraded.", ref("Status"), { "Retry-After": { $ref: "#/components/headers/Retry-After" } }),
          ...errorResponses(KEYLESS_ERRORS),
        },
      },
    },
    [OPENAPI_PATH]: {
      get: {
        operationId: "getOpenApi",
        summary: "This description",
        description: "No key needed.",
        security: [],
        parameters: [],
        responses: { "200": jsonResponse("The OpenAPI 3.1 document.", { type: "object" }), ...errorResponses(KEYLESS_ERRORS) },
      },
    },
  };
  for (const operation of operations) {
    (paths[pathOf(operation.path)] ??= {})[operation.method.toLowerCase()] = operationObject(operation);
  }
  const errorResponse = (status: string): Schema => {
    const headers: Record<string, unknown> = { "Stripe-Should-Retry": { $ref: "#/components/headers/Stripe-Should-Retry" } };
    if (status === "405") headers["Allow"] = { description: "The verbs this path has, e.g. `GET, POST`.", schema: { type: "string" }, required: true };
    if (status === "401") headers["WWW-Authenticate"] = { description: "`Bearer`.", schema: { type: "string" }, required: true };
    if (status === "429" || status === "503") headers["Retry-After"] = { $ref: "#/components/headers/Retry-After" };
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
        "Authenticate with `Authorization: Bearer <key>` (or HTTP Basic with the key as user name, as `curl -u sk_...:` sends it).",
    },
    // Relative: the origin this document was fetched from (`npm start` serves it on https://localhost:8443).
    servers: [{ url: "/", description: "The origin serving this document." }],
    security: [{ bearerAuth: [] }],
    paths,
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
      },
      headers: {
        "Request-Id": { description: "This request's id.", required: true, schema: { type: "string", pattern: "^req_[0-9A-Za-z]+$" } },
        "Api-Version": { description: "The API version.", required: true, schema: { type: "string", const: API_VERSION } },
        "Idempotent-Replayed": { description: "`true` on a replayed response.", schema: { type: "string", const: "true" } },
        "Retry-After": { description: "Seconds to wait before retrying.", required: true, schema: { type: "string", pattern: "^[0-9]+$" } },
        "Stripe-Should-Retry": {
          description: "`true` when the same request may succeed if retried (429, 503, 409 `idempotency_key_in_use`), `false` when a retry cannot fix it.",
          required: true,
          schema: { type: "string", enum: ["true", "false"] },
        },
      },
      responses: Object.fromEntries(Object.keys(ERROR_STATUSES).map((status) => [`Error${status}`, errorResponse(status)])),
      schemas: {
        Resource: {
          type: "object",
          additionalProperties: false,
          required: ["id", "object", "name", "status", "metadata", "created"],
          properties: {
            id: RESOURCE_ID,
            object: { type: "string", const: "resource" },
            name: { type: "string", minLength: 1, maxLength: 200 },
            status: STATUS,
            metadata: { type: "object", maxProperties: 50, additionalProperties: { type: "string", maxLength: 500 } },
            created: { type: "integer", description: "Unix seconds." },
          },
        },
        ResourceList: {
          type: "object",
          additionalProperties: false,
          required: ["object", "url", "has_more", "data"],
          properties: {
            object: { type: "string", const: "list" },
            url: { type: "string", const: "/v1/resources" },
            has_more: { type: "boolean" },
            data: { type: "array", maxItems: LIST_LIMIT_MAX, items: ref("Resource") },
          },
        },
        DeletedResource: {
          type: "object",
          additionalProperties: false,
          required: ["id", "object", "deleted"],
          properties: { id: RESOURCE_ID, object: { type: "string", const: "resource" }, deleted: { type: "boolean", const: true } },
        },
        Status: {
          type: "object",
          additionalProperties: false,
          required: ["object", "status", "version"],
          properties: {
            object: { type: "string", const: "status" },
            status: { type: "string", enum: ["operational", "degraded"] },
            version: { type: "string", const: API_VERSION },
          },
        },
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
export function openApiHandler(operations: readonly Operation[]): RequestHandler {
  const body = JSON.stringify(openApiDocument(operations));
  return (_req, res) => {
    res.status(200).send(body);
  };
}
