import { KeyKind, requestIdTime } from "@rms/proto";
import type { Request, RequestHandler, Response } from "express";
import { clientAddress } from "../transport/client-address.js";
import { factsOf, type RequestFacts } from "../http/facts.js";
import { requestIdOf } from "../http/request-id.js";
import { REPLAYED_HEADER } from "../idempotency/replay.js";
import type { RequestLogRecorder } from "./recorder.js";
import { KEPT_BYTES, keep, mayHoldSecret, redact, redactText } from "./redact.js";
import type { RequestLogDocument } from "./store.js";

/** What recording needs beyond the recorder. */
export interface CaptureOptions {
  readonly retentionDays: number;
  readonly trustedProxies: ReadonlySet<string>;
}

const KEY_KINDS: Partial<Record<KeyKind, RequestLogDocument["key_kind"]>> = {
  [KeyKind.SECRET]: "secret",
  [KeyKind.RESTRICTED]: "restricted",
  [KeyKind.PUBLISHABLE]: "publishable",
};

/** Bodies that are file contents, never recorded whatever the route (the files API's multipart and octet-stream). */
const FILE_CONTENT = /^\s*(?:multipart\/|application\/octet-stream)/i;
/** Answers larger than this are not parsed for the log (none of the API's JSON answers comes near it). */
const PARSED_BYTES_MAX = 4 * 1024 * 1024;

/**
 * Records every request answered to a key of an account (CONTRACT.md section 12): the body given to `res.send` is
 * kept by reference, and once the answer has gone (`finish`) the record is built (redacted, cut) and queued for the
 * recorder's next batch. A request without a known key (none, unknown, refused before its key was looked up) has
 * no account and is not recorded. Nothing here runs before the answer is sent, and nothing here can throw into it.
 */
export function recordRequests(recorder: RequestLogRecorder, options: CaptureOptions): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    const send = res.send;
    res.send = function sendKept(this: Response, body?: unknown) {
      factsOf(res).body = body;
      return send.call(this, body);
    } as Response["send"];
    res.once("finish", () => {
      try {
        const record = buildRecord(req, res, options, Number((process.hrtime.bigint() - started) / 1_000_000n));
        if (record) recorder.add(record);
      } catch {
        // A record that cannot be built is lost, never the answer.
      }
    });
    next();
  };
}

function headerText(value: string | string[] | undefined): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** The answer's JSON, parsed (null when it was not JSON or is not an object). */
function answered(body: unknown, res: Response): Record<string, unknown> | null {
  const type = String(res.getHeader("Content-Type") ?? "");
  if (!type.includes("json")) return null;
  let text: string;
  if (typeof body === "string") text = body;
  else if (Buffer.isBuffer(body)) text = body.toString("utf8");
  else return null;
  if (text.length > PARSED_BYTES_MAX) return { truncated: true };
  return parsedObject(text);
}

function parsedObject(text: string): Record<string, unknown> | null {
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * What the record keeps of the answer (`response_body`): the body, parsed (its error's type and code are read from
 * it), and the JSON text stored. A success body the gateway rendered (`facts.answer`, its text being what was sent)
 * is stored as its text when that shows nothing to redact and fits the record (what `keep(redact(...))` of it would
 * give), with no object; else taken as the object it was written from, or its text parsed when it has none (a page
 * core wrote). Any other answer (an error, a replay) is parsed back from what was sent.
 */
function answerOf(facts: RequestFacts, res: Response): { readonly body: Record<string, unknown> | null; readonly kept: string | null } {
  const rendered = facts.answer;
  const asSent = rendered === undefined || facts.body !== rendered.text || rendered.text.length > PARSED_BYTES_MAX;
  if (asSent || !String(res.getHeader("Content-Type") ?? "").includes("json")) {
    const body = answered(facts.body, res);
    return { body, kept: body ? JSON.stringify(keep(redact(body))) : null };
  }
  const whole = !mayHoldSecret(rendered.text) && Buffer.byteLength(rendered.text, "utf8") <= KEPT_BYTES;
  // Its text is stored as it is, and only an error's fields are read from the object: a success kept whole is not
  // converted again (a page core wrote as text is not parsed back).
  if (whole && res.statusCode < 400) return { body: null, kept: rendered.text };
  const body = rendered.object !== undefined && isJsonValue(rendered.object) ? rendered.object : parsedObject(rendered.text);
  if (!body) return { body, kept: null };
  return { body, kept: whole ? rendered.text : JSON.stringify(keep(redact(body))) };
}

/**
 * A value that is what `JSON.parse` of its JSON text would give (strings, finite numbers, booleans, null, arrays,
 * plain objects), so storing it stores what parsing the answer would have; anything else (undefined, a Date, a
 * bigint) sends the record back to parsing the text.
 */
function isJsonValue(value: unknown): boolean {
  if (value === null || typeof value === "string" || typeof value === "boolean") return true;
  if (typeof value === "number") return Number.isFinite(value) && !Object.is(value, -0);
  if (Array.isArray(value)) return value.every(isJsonValue);
  if (typeof value !== "object") return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  if (prototype !== Object.prototype && prototype !== null) return false;
  for (const key in value) if (!isJsonValue((value as Record<string, unknown>)[key])) return false;
  return true;
}

/** As the `path` filter takes it: no trailing slash (Express routes `/v1/resources/` as `/v1/resources`). */
function requestPath(req: Request): string {
  return redactText(req.path.length > 1 && req.path.endsWith("/") ? req.path.slice(0, -1) : req.path).slice(0, 1_024);
}

/** The route the request matched (`/v1/resources/:id`): the path without the parts its client chose. */
function routePattern(req: Request): string {
  const route = (req.route as { path?: unknown } | undefined)?.path;
  return typeof route === "string" ? route : "/v1";
}

/** The stored record of a finished request, or undefined when it belongs to no account. */
export function buildRecord(req: Request, res: Response, options: CaptureOptions, durationMs: number): RequestLogDocument | undefined {
  const facts = factsOf(res);
  const principal = facts.principal;
  if (!principal) return undefined;
  const id = requestIdOf(res);
  const createdMs = requestIdTime(id) ?? Date.now();
  const status = res.statusCode;
  const { body, kept } = answerOf(facts, res);
  const error = status >= 400 && body && typeof body["error"] === "object" && body["error"] !== null ? (body["error"] as Record<string, unknown>) : undefined;
  const errorType = typeof error?.["type"] === "string" ? error["type"] : undefined;
  const errorCode = typeof error?.["code"] === "string" ? error["code"] : facts.errorCode;
  // A refused key (revoked or expired) speaks for no account: its request is recorded without any text its client chose.
  const refusedKey = errorCode === "api_key_revoked" || errorCode === "api_key_expired";
  const fileContent = FILE_CONTENT.test(headerText(req.headers["content-type"]) ?? "");
  const params =
    !refusedKey && !fileContent && facts.params !== undefined && facts.params !== null && typeof facts.params === "object"
      ? JSON.stringify(keep(redact(facts.params)))
      : null;
  const idempotencyKey = req.method === "POST" && !refusedKey ? headerText(req.headers["idempotency-key"]) : undefined;
  const userAgent = refusedKey ? undefined : headerText(req.headers["user-agent"]);
  return {
    _id: id,
    account: principal.tenant.accountId,
    livemode: principal.tenant.livemode,
    method: req.method,
    path: refusedKey ? routePattern(req) : requestPath(req),
    status,
    status_class: `${Math.floor(status / 100)}xx`,
    ...(errorType !== undefined ? { error_type: errorType } : {}),
    ...(errorCode !== undefined ? { error_code: errorCode } : {}),
    api_key: principal.keyId,
    key_kind: KEY_KINDS[principal.kind] ?? "secret",
    ...(idempotencyKey !== undefined ? { idempotency_key: redactText(idempotencyKey).slice(0, 255) } : {}),
    idempotent_replayed: res.getHeader(REPLAYED_HEADER) === "true",
    duration_ms: durationMs,
    client_ip: clientAddress(req, options.trustedProxies),
    user_agent: userAgent !== undefined ? redactText(userAgent).slice(0, 512) : null,
    created: Math.floor(createdMs / 1000),
    request_params_json: params,
    response_body_json: kept,
    // By the key that made the request: a dashboard session's key is the dashboard's (docs/request-logs.md).
    source: principal.dashboardSession ? "dashboard" : "api",
    expires_at: new Date(createdMs + options.retentionDays * 86_400_000),
  };
}
