import type { IncomingMessage } from "node:http";
import qs from "qs";
import { ApiError } from "../errors.js";
import { checkFormPairs, decodeFormComponent } from "./form-pairs.js";
import { continueBody } from "../transport/expect-continue.js";

/** Largest accepted request body, in bytes (1 MiB). */
export const BODY_LIMIT_BYTES = 1024 * 1024;
export const NESTING_DEPTH_LIMIT = 5;
export const PARAMETER_LIMIT = 1000;
/**
 * Most parameters of a form body, on an operation that takes more than PARAMETER_LIMIT in JSON (a job: its 1,000
 * ids and its other fields fit; an import's 10,000 items do not, JSON is their encoding). Decoding a form costs
 * 5-25 microseconds per parameter, JSON about 1 (docs/decisions.md, "Jobs"): this bounds what a form body costs.
 */
export const FORM_BODY_PARAMETER_LIMIT = 2000;

/** Parsed request parameters: a null-prototype object, so any key is plain data. */
export type Params = Record<string, unknown>;

/**
 * qs would turn `metadata[0]=x` into an array and silently drop `__proto__`
 * segments. Escaping such key segments before qs sees them (and unescaping
 * after) keeps every key as plain data: only `[]` makes an array.
 */
const ESCAPE = "\u0000";
const needsEscape = (segment: string) => /^\d+$/.test(segment) || segment === "__proto__" || segment.startsWith(ESCAPE);
const escapeSegment = (segment: string) => (needsEscape(segment) ? ESCAPE + segment : segment);
const unescapeSegment = (segment: string) => (segment.startsWith(ESCAPE) ? segment.slice(1) : segment);

/** Escapes the root and each `[segment]` of a decoded key, the way qs will split it. */
export function escapeKey(key: string): string {
  const match = /^([^[]*)((?:\[[^[\]]*\])*)([\s\S]*)$/.exec(key);
  if (!match) return key;
  const [, root = "", segments = "", rest = ""] = match;
  const escaped = segments.replace(/\[([^[\]]*)\]/g, (_all, inner: string) => (inner === "" ? "[]" : `[${escapeSegment(inner)}]`));
  return escapeSegment(root) + escaped + rest;
}

function unescapeTree(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(unescapeTree);
  if (value !== null && typeof value === "object") {
    const out: Params = Object.create(null) as Params;
    for (const key of Object.keys(value)) out[unescapeSegment(key)] = unescapeTree((value as Params)[key]);
    return out;
  }
  return value;
}

const QS_OPTIONS: qs.IParseOptions & { throwOnLimitExceeded: boolean; strictDepth: boolean } = {
  depth: NESTING_DEPTH_LIMIT,
  strictDepth: true,
  parameterLimit: PARAMETER_LIMIT,
  arrayLimit: PARAMETER_LIMIT,
  throwOnLimitExceeded: true,
  allowPrototypes: false,
  plainObjects: true,
  allowDots: false,
  parseArrays: true,
  charset: "utf-8",
  decoder(text, defaultDecoder, charset, type) {
    const decoded = defaultDecoder(text, defaultDecoder, charset) as string;
    return type === "key" ? escapeKey(decoded) : decoded;
  },
};

/** How many parameters a form body or query string holds as the form decoder counts them (`&`-separated parts), decoding none. */
export function formPartCount(text: string): number {
  if (text === "") return 0;
  let count = 1;
  for (let at = text.indexOf("&"); at !== -1; at = text.indexOf("&", at + 1)) count++;
  return count;
}

/**
 * Parses a form body or query string with Stripe bracket notation, within the limits (`limit`: most parameters,
 * counted before anything is decoded, so that a refusal costs next to nothing).
 */
export function parseForm(text: string, limit: number = PARAMETER_LIMIT): Params {
  if (formPartCount(text) > limit) throw new ApiError("parameter_invalid", `Too many parameters: at most ${limit}.`);
  checkFormPairs(text);
  let parsed: unknown;
  try {
    // Only the parameter count grows: qs builds `[]` lists and repeated names in time quadratic in their
    // length, so lists stay within the usual 1,000 (1,000 ids is the longest list a job takes in a form;
    // long item lists use the indexed form, `items[0][name]`, which is plain keys).
    parsed = qs.parse(text, limit === PARAMETER_LIMIT ? QS_OPTIONS : { ...QS_OPTIONS, parameterLimit: limit });
  } catch (error) {
    if (error instanceof RangeError) {
      // A `[]` list longer than the array limit is not "too many parameters" when the body may hold more
      // (a job's form): name the list, as its JSON form's answer does.
      const list = /array limit/i.test(error.message) ? overlongList(text) : undefined;
      if (list !== undefined) throw new ApiError("parameter_invalid", `Invalid ${list}: at most ${PARAMETER_LIMIT} values in one list.`, { param: list });
      throw new ApiError(
        "parameter_invalid",
        `Too many parameters or nesting too deep: at most ${limit} parameters, nested at most ${NESTING_DEPTH_LIMIT} levels.`,
      );
    }
    throw new ApiError("parameter_invalid", "The parameters could not be parsed.");
  }
  return unescapeTree(parsed) as Params;
}

/** The name of the first `name[]=` list given more often than qs's array limit, if any (names are decoded already valid). */
function overlongList(text: string): string | undefined {
  const counts = new Map<string, number>();
  for (const pair of text.split("&")) {
    const at = pair.indexOf("=");
    const key = decodeFormComponent(at === -1 ? pair : pair.slice(0, at));
    if (!key.endsWith("[]")) continue;
    const name = key.slice(0, -2);
    const count = (counts.get(name) ?? 0) + 1;
    if (count > PARAMETER_LIMIT) return name;
    counts.set(name, count);
  }
  return undefined;
}

const tooDeep = () => new ApiError("parameter_invalid", `The request body is nested too deeply: at most ${NESTING_DEPTH_LIMIT} levels.`);

function checkWellFormed(text: string): void {
  if (!text.isWellFormed())
    throw new ApiError("parameter_invalid", "The request contains a lone UTF-16 surrogate (\\uD800-\\uDFFF without its pair): not a valid Unicode string.");
}

/** Re-creates JSON objects with null prototypes, counting parameters like the form parser does. */
function toParams(value: unknown, depth: number, budget: { left: number; readonly limit: number }): unknown {
  if (typeof value === "string") {
    checkWellFormed(value);
    return value;
  }
  if (Array.isArray(value)) {
    if (depth > NESTING_DEPTH_LIMIT) throw tooDeep();
    budget.left -= value.length;
    if (budget.left < 0) throw tooManyJson(budget.limit);
    return value.map((item) => toParams(item, depth + 1, budget));
  }
  if (value !== null && typeof value === "object") {
    if (depth > NESTING_DEPTH_LIMIT) throw tooDeep();
    const out: Params = Object.create(null) as Params;
    for (const [key, item] of Object.entries(value)) {
      if (--budget.left < 0) throw tooManyJson(budget.limit);
      checkWellFormed(key);
      out[key] = toParams(item, depth + 1, budget);
    }
    return out;
  }
  return value;
}

const tooManyJson = (limit: number) => new ApiError("parameter_invalid", `Too many parameters: at most ${limit}.`);

export function parseJson(text: string, limit: number = PARAMETER_LIMIT): Params {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ApiError("parameter_invalid", "Invalid JSON in the request body.");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new ApiError("parameter_invalid", "The JSON request body must be an object.");
  }
  return toParams(value, 0, { left: limit, limit }) as Params;
}

function hasBody(req: IncomingMessage): boolean {
  const length = req.headers["content-length"];
  if (req.headers["transfer-encoding"] !== undefined) return true;
  return length !== undefined && length !== "0";
}

function tooLarge(): ApiError {
  return new ApiError("request_too_large", `The request body is too large: at most ${BODY_LIMIT_BYTES} bytes.`);
}

function unsupported(what: string): ApiError {
  return new ApiError("unsupported_media_type", `${what} Send the body as application/json or application/x-www-form-urlencoded.`);
}

/** Reads the whole body as bytes, refusing to buffer more than the limit. */
function readBody(req: IncomingMessage): Promise<Buffer> {
  const declared = Number(req.headers["content-length"] ?? Number.NaN);
  if (Number.isFinite(declared) && declared > BODY_LIMIT_BYTES) return Promise.reject(tooLarge());
  // Every check the headers allow is made: a client waiting on `Expect: 100-continue` may send the body now.
  continueBody(req);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("aborted", onAborted);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > BODY_LIMIT_BYTES) {
        cleanup();
        req.pause();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const onAborted = () => onError(new Error("request aborted"));
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("aborted", onAborted);
  });
}

/** Decodes UTF-8 strictly: invalid bytes are an invalid request, not replacement characters. */
function utf8(bytes: Buffer): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new ApiError("parameter_invalid", "The request body is not valid UTF-8.");
  }
}

/**
 * The request body as parameters: JSON or form, anything else with a body is 415.
 * A request without a body has no body parameters. `limit`: most parameters of a JSON body; a form body takes
 * at most FORM_BODY_PARAMETER_LIMIT of them. `lists`: the parameters that take a list, which a form may give once.
 */
export async function bodyParams(req: IncomingMessage, limit: number = PARAMETER_LIMIT, lists: readonly string[] = []): Promise<Params> {
  if (!hasBody(req)) return Object.create(null) as Params;
  const encoding = (req.headers["content-encoding"] ?? "identity").trim().toLowerCase();
  if (encoding !== "identity") throw unsupported(`Content-Encoding '${encoding.slice(0, 40)}' is not supported.`);
  const contentType = req.headers["content-type"];
  if (contentType === undefined) throw unsupported("A request body needs a Content-Type.");
  const [mediaType = "", ...parameters] = contentType.split(";").map((part) => part.trim().toLowerCase());
  const charset = parameters
    .find((p) => p.startsWith("charset="))
    ?.slice("charset=".length)
    .replace(/"/g, "");
  if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") throw unsupported(`Charset '${charset.slice(0, 40)}' is not supported; use utf-8.`);
  if (mediaType !== "application/json" && mediaType !== "application/x-www-form-urlencoded") {
    throw unsupported(`Content-Type '${mediaType.slice(0, 100)}' is not supported.`);
  }
  const text = utf8(await readBody(req));
  // No body but JSON's own whitespace is no parameters; anything else (a form feed, which `trim` would drop) is parsed, and refused.
  if (mediaType === "application/json") return /^[ \t\n\r]*$/.test(text) ? (Object.create(null) as Params) : parseJson(text, limit);
  const formLimit = Math.min(limit, FORM_BODY_PARAMETER_LIMIT);
  if (limit > formLimit && formPartCount(text) > formLimit) {
    throw new ApiError(
      "parameter_invalid",
      `Too many parameters for a form-encoded body: at most ${formLimit}. This request takes up to ${limit} parameters as JSON: send it with ` +
        `Content-Type: application/json.`,
    );
  }
  const form = parseForm(text, formLimit);
  // OpenAPI's form encoding of a list is `name=a&name=b`, so a list parameter given once (`name=a`) is a list of one,
  // as its JSON `["a"]` is. (A JSON string where a list belongs stays refused.)
  for (const name of lists) if (typeof form[name] === "string") form[name] = [form[name]];
  return form;
}

/** The query string of a request URL as parameters. */
export function queryParams(url: string): Params {
  const at = url.indexOf("?");
  if (at === -1) return Object.create(null) as Params;
  const query = url.slice(at + 1);
  // Bytes outside ASCII reach us as they were sent, not as UTF-8: only %-escapes say what they mean.
  if (/[^\x21-\x7e]/.test(query)) throw new ApiError("parameter_invalid", "The query string must be ASCII: %-encode other characters as UTF-8.");
  return parseForm(query);
}

/**
 * All parameters of a request: the query string and the body. A name given in
 * both is ambiguous and refused. `bodyLimit`: most parameters of the body (an
 * operation taking long lists, such as an import, allows more in JSON, and up to
 * FORM_BODY_PARAMETER_LIMIT in a form; the 1 MiB limit still holds).
 */
export async function requestParams(
  req: IncomingMessage & { originalUrl?: string },
  bodyLimit: number = PARAMETER_LIMIT,
  lists: readonly string[] = [],
): Promise<Params> {
  const query = queryParams(req.originalUrl ?? req.url ?? "");
  const body = await bodyParams(req, bodyLimit, lists);
  for (const key of Object.keys(query)) {
    if (Object.hasOwn(body, key)) throw new ApiError("parameter_invalid", `Parameter '${key}' was given both in the URL and in the body.`, { param: key });
    body[key] = query[key];
  }
  return body;
}
