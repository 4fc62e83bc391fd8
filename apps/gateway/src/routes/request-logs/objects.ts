import { LIST_LIMIT_MAX } from "@rms/proto";
import { constant, field, listOf, publicObject } from "../../schema/objects.js";
import { CREATED_RANGE_PARAM, LIMIT_PARAM } from "../../schema/params.js";
import { requestParamsOf, responseBodyOf, type StoredRequestLog } from "../../request-logs/store.js";
import type { ParamSpec } from "../../engine/operation.js";

const REQUEST_ID = { type: "string", pattern: "^req_[0-9A-Za-z]{24}$" } as const;
/** A request id of the examples: well-formed, names no request. */
export const EXAMPLE_REQUEST_ID = `req_${"0".repeat(24)}`;
const KEPT = {
  type: ["object", "null"],
  description: 'Redacted (secrets are `"[redacted]"`) and kept up to 8 KiB of JSON: a longer one is cut, with `"truncated": true` as its last field.',
} as const;

/** The public request log object of CONTRACT.md section 12, fields in contract order. */
export const RequestLogObject = publicObject<StoredRequestLog>("RequestLog", {
  id: field({ ...REQUEST_ID, description: "The request's `Request-Id`." }, (r) => r._id),
  object: constant("request_log"),
  method: field({ type: "string" }, (r) => r.method),
  path: field({ type: "string", description: "The path requested, without its query." }, (r) => r.path),
  status: field({ type: "integer", description: "The HTTP status answered." }, (r) => r.status),
  error_type: field({ type: ["string", "null"] }, (r) => r.error_type ?? null),
  error_code: field({ type: ["string", "null"] }, (r) => r.error_code ?? null),
  api_key: field({ type: "string", description: "The id of the key the request was made with (`key_...`), never the key." }, (r) => r.api_key),
  key_kind: field({ type: "string", enum: ["secret", "restricted", "publishable"] }, (r) => r.key_kind),
  idempotency_key: field({ type: ["string", "null"] }, (r) => r.idempotency_key ?? null),
  idempotent_replayed: field({ type: "boolean" }, (r) => r.idempotent_replayed),
  duration_ms: field({ type: "integer", minimum: 0, description: "From the request's arrival to the end of its answer." }, (r) => r.duration_ms),
  client_ip: field({ type: "string" }, (r) => r.client_ip),
  user_agent: field({ type: ["string", "null"] }, (r) => r.user_agent),
  livemode: field({ type: "boolean" }, (r) => r.livemode),
  created: field({ type: "integer", description: "Unix seconds." }, (r) => r.created),
  request_params: field(
    {
      ...KEPT,
      description: `The parameters as parsed (query or body); null when none were read (refused before) or they were file contents. ${KEPT.description}`,
    },
    requestParamsOf,
  ),
  response_body: field({ ...KEPT, description: `The JSON answered; null for an answer that was not JSON. ${KEPT.description}` }, responseBodyOf),
  source: field(
    {
      type: "string",
      enum: ["api", "dashboard"],
      description:
        "Where the request came from, by its key: `dashboard` for a dashboard session's key (`POST /v1/dashboard_sessions`), `api` for every other key.",
    },
    (r) => r.source ?? "api",
  ),
});

export const RequestLogListObject = listOf(RequestLogObject, "/v1/request_logs", LIST_LIMIT_MAX);

/** The `:id` of `/v1/request_logs/:id`. */
export const REQUEST_LOG_ID_PATH = {
  id: { example: EXAMPLE_REQUEST_ID, schema: { type: "string", description: "The request id (`Request-Id`)." } },
} satisfies Record<string, ParamSpec>;

// A query string given an empty value is refused like any empty parameter (400 `parameter_invalid_empty`).
const cursor = { type: "string", pattern: "^req_[0-9A-Za-z]{24}$" } as const;

/**
 * The text filters as the list checks them (`list.ts`) and the document states them: the pattern each matches and
 * its longest length. One definition, so the two cannot say different things.
 */
export const TEXT_FILTERS = {
  status: { max: 3, pattern: "^[1-5](\\d\\d|xx)$" },
  path: { max: 1024, pattern: "^/[\\x21-\\x7e]*$" },
  api_key: { max: 64, pattern: "^key_[0-9A-Za-z]+$" },
  idempotency_key: { max: 255, pattern: "^[\\x20-\\x7e]+$" },
  error_code: { max: 64, pattern: "^[a-z_]+$" },
} as const;

/** A text filter's schema: its pattern and length as `TEXT_FILTERS` says. */
const textFilterSchema = (name: keyof typeof TEXT_FILTERS, description: string) => ({
  type: "string",
  minLength: 1,
  maxLength: TEXT_FILTERS[name].max,
  pattern: TEXT_FILTERS[name].pattern,
  description,
});

/** `source`: which requests to show; the dashboard's own are hidden unless asked for (CONTRACT.md section 12). */
export const SOURCE_PARAM = {
  example: "all",
  schema: {
    type: "string",
    enum: ["api", "dashboard", "all"],
    default: "api",
    description: "`api` (the default): requests made with API keys; `dashboard`: those of dashboard sessions; `all`: both.",
  },
} satisfies ParamSpec;

/**
 * Cursors, page size and the filters of `GET /v1/request_logs` (CONTRACT.md section 12). The examples together
 * make one accepted request (a path with a method, one cursor): the other filters have none.
 */
export const REQUEST_LOG_LIST_PARAMS = {
  limit: LIMIT_PARAM,
  starting_after: {
    example: EXAMPLE_REQUEST_ID,
    notWith: "ending_before",
    schema: { ...cursor, description: "Cursor: the page after this request id (older). Not together with `ending_before` (400)." },
  },
  ending_before: {
    example: undefined,
    schema: { ...cursor, description: "Cursor: the page before this request id (newer). Not together with `starting_after` (400)." },
  },
  status: { example: undefined, schema: textFilterSchema("status", "An exact status (`404`) or a class (`2xx`, `4xx`, `5xx`).") },
  method: { example: "POST", schema: { type: "string", enum: ["GET", "POST", "DELETE"], description: "The request's method." } },
  path: {
    example: "/v1/resources",
    schema: textFilterSchema("path", "An exact path: a collection (`/v1/resources`) or one object (`/v1/resources/res_...`)."),
  },
  api_key: { example: undefined, schema: textFilterSchema("api_key", "The id of the key the requests were made with.") },
  idempotency_key: { example: undefined, schema: textFilterSchema("idempotency_key", "The Idempotency-Key the requests carried (printable ASCII).") },
  error_code: { example: undefined, schema: textFilterSchema("error_code", "The error code answered.") },
  source: SOURCE_PARAM,
  created: CREATED_RANGE_PARAM,
} satisfies Record<string, ParamSpec>;
