import { ApiError } from "../../errors.js";
import { optionalEnum, optionalString } from "../../parsing/params.js";
import { ACCEPTED_COMBINATIONS, indexFor, type RequestLogFilter, type SourceFilter } from "../../request-logs/store.js";
import { createdParam, listLimit } from "../../schema/params.js";
import { defineLocalOperation } from "../../engine/operation.js";
import { REQUEST_LOG_LIST_PARAMS, RequestLogListObject, TEXT_FILTERS } from "./objects.js";

const REQUEST_ID = /^req_[0-9A-Za-z]{24}$/;
const invalid = (param: string, message: string) => new ApiError("parameter_invalid", message, { param });

/** A cursor: a well-formed request id (its log may have expired since), or absent (`""` too). */
function cursorParam(params: Record<string, unknown>, name: string): string | undefined {
  const value = optionalString(params, name);
  if (value === undefined || value === "") return undefined;
  if (!REQUEST_ID.test(value)) throw invalid(name, `Invalid ${name}: must be a request id (req_...).`);
  return value;
}

/** A filter given as text: absent, or 1 to its `max` characters matching its pattern (`TEXT_FILTERS`, as documented). */
function textFilter(params: Record<string, unknown>, name: keyof typeof TEXT_FILTERS): string | undefined {
  const { pattern, max } = TEXT_FILTERS[name];
  const value = optionalString(params, name);
  if (value === undefined) return undefined;
  if (value.length === 0 || value.length > max || !new RegExp(pattern).test(value))
    throw invalid(name, `Invalid ${name}: 1 to ${max} characters matching ${pattern}.`);
  return value;
}

const names = (fields: readonly string[]) => (fields.length === 0 ? "none" : fields.map((f) => (f === "status_class" ? "status (class)" : f)).join(" + "));

/** `source`: `api` (absent), `dashboard` or `all`. */
export function sourceParam(params: Record<string, unknown>): SourceFilter {
  return optionalEnum(params, "source", ["api", "dashboard", "all"] as const) ?? "api";
}

/**
 * The filters of a request, checked; 400 for a combination no index serves (section 12: refused, not scanned), unless
 * `anyCombination` (a stream, whose catch-up reads every record of the source in order: docs/streams.md).
 */
export function requestLogFilter(params: Record<string, unknown>, anyCombination = false): RequestLogFilter {
  const filter: RequestLogFilter = {};
  const status = textFilter(params, "status");
  if (status !== undefined) {
    if (status.endsWith("xx")) filter.status_class = status;
    else filter.status = Number(status);
  }
  const method = optionalEnum(params, "method", ["GET", "POST", "DELETE"] as const);
  if (method !== undefined) filter.method = method;
  const path = textFilter(params, "path");
  if (path !== undefined) filter.path = path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
  const apiKey = textFilter(params, "api_key");
  if (apiKey !== undefined) filter.api_key = apiKey;
  const idempotencyKey = textFilter(params, "idempotency_key");
  if (idempotencyKey !== undefined) filter.idempotency_key = idempotencyKey;
  const errorCode = textFilter(params, "error_code");
  if (errorCode !== undefined) filter.error_code = errorCode;
  if (!anyCombination && indexFor(filter) === undefined) {
    const given = Object.keys(filter);
    throw invalid(
      given.find((f) => f !== "path") ?? given[0] ?? "status",
      `No index serves the filters ${names(given)} together. Accepted: each filter alone, or ${ACCEPTED_COMBINATIONS.filter((c) => c.length > 1)
        .map(names)
        .join(", ")}; each with created[...] and the cursors.`,
    );
  }
  return filter;
}

/** GET /v1/request_logs: one page, newest first, in the list envelope. */
export const listRequestLogs = defineLocalOperation({
  method: "GET",
  path: "/v1/request_logs",
  summary: "List request logs",
  scope: "request_logs:read",
  parameters: REQUEST_LOG_LIST_PARAMS,
  success: {
    status: 200,
    description:
      "One page of this account's requests in this key's mode, newest first (kept 14 days); the dashboard's own only with `source`. Each filter alone, " +
      "or `path` with `method`, combines with `source`, `created` and the cursors; another combination is 400.",
    object: RequestLogListObject,
  },
  errors: ["limit_invalid", "parameter_invalid", "parameter_invalid_empty"],
  read({ params, tenant }) {
    const limit = listLimit(params);
    const startingAfter = cursorParam(params, "starting_after");
    const endingBefore = cursorParam(params, "ending_before");
    if (startingAfter !== undefined && endingBefore !== undefined) throw invalid("ending_before", "Give starting_after or ending_before, not both.");
    const filter = requestLogFilter(params);
    const source = sourceParam(params);
    const bounds = createdParam(params);
    const created = Object.fromEntries(Object.entries(bounds).map(([bound, at]) => [bound, Number(at)]));
    return (stores) =>
      stores.requestLogs.list({
        account: tenant.accountId,
        livemode: tenant.livemode,
        filter,
        source,
        created,
        limit,
        ...(startingAfter !== undefined ? { startingAfter } : {}),
        ...(endingBefore !== undefined ? { endingBefore } : {}),
      });
  },
  reply: (page) => ({ items: page.data, hasMore: page.hasMore }),
});
