/**
 * The resources page's filters: kept in the page's URL (so a filtered list can be shared, and back and forward
 * work) and turned into the list's query parameters (CONTRACT.md section 3: `status`, `created[gte|lte]`,
 * `metadata[key]=value`, `ids[]`, the cursors) or into a search query.
 */

import { RESOURCE_STATUSES, type ResourceStatus } from "../vocabulary";

/** The page's search params: strings only, every one optional, none empty. */
export interface ResourceFilters {
  status?: ResourceStatus;
  /** `YYYY-MM-DD` (UTC): created on or after that day. */
  from?: string;
  /** `YYYY-MM-DD` (UTC): created on or before that day. */
  to?: string;
  metaKey?: string;
  metaValue?: string;
  /** Space- or comma-separated resource ids. */
  ids?: string;
  /** A search query in the API's language (`name~"sta" AND status:"active"`): the search endpoint serves it. */
  q?: string;
  after?: string;
  before?: string;
  /** The search's `next_page`. */
  page?: string;
}

const KEYS = ["status", "from", "to", "metaKey", "metaValue", "ids", "q", "after", "before", "page"] as const;

/** Search params as they come from the URL (any shape) to filters: unknown keys and empty values dropped. */
export function parseFilters(search: Record<string, unknown>): ResourceFilters {
  const out: ResourceFilters = {};
  for (const key of KEYS) {
    const value = search[key];
    if (typeof value !== "string" && typeof value !== "number") continue;
    const text = String(value).trim();
    if (text === "") continue;
    if (key === "status") {
      if ((RESOURCE_STATUSES as readonly string[]).includes(text)) out.status = text as ResourceStatus;
      continue;
    }
    if ((key === "from" || key === "to") && !/^\d{4}-\d{2}-\d{2}$/.test(text)) continue;
    out[key] = text;
  }
  return out;
}

/** Unix seconds of the start (or the end) of a `YYYY-MM-DD` day in UTC. */
export function dayBound(day: string, end: boolean): number {
  const start = Date.parse(`${day}T00:00:00Z`) / 1000;
  return end ? start + 86_399 : start;
}

export function splitIds(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

/** The list's filters, as the SDK takes them (the API's field names; bracket notation is the SDK's job). */
interface ListFilters {
  limit: number;
  status?: ResourceStatus;
  created?: { gte?: number; lte?: number };
  metadata?: Record<string, string>;
  ids?: string[];
}

/** The filters and at most one cursor (the API refuses both). */
export type ListQuery = ListFilters & ({ starting_after?: string; ending_before?: never } | { starting_after?: never; ending_before?: string });

export function listQuery(filters: ResourceFilters, limit = 20): ListQuery {
  const query: ListFilters = { limit };
  if (filters.status) query.status = filters.status;
  if (filters.from || filters.to) {
    query.created = {};
    if (filters.from) query.created.gte = dayBound(filters.from, false);
    if (filters.to) query.created.lte = dayBound(filters.to, true);
  }
  if (filters.metaKey) query.metadata = { [filters.metaKey]: filters.metaValue ?? "" };
  if (filters.ids) query.ids = splitIds(filters.ids);
  if (filters.after) return { ...query, starting_after: filters.after };
  if (filters.before) return { ...query, ending_before: filters.before };
  return query;
}

/** The same query as the URL's query string the API reads (what the SDK sends), for tests and links. */
export function listQueryString(query: ListQuery): string {
  const params = new URLSearchParams();
  params.set("limit", String(query.limit));
  if (query.status) params.set("status", query.status);
  for (const [op, value] of Object.entries(query.created ?? {})) params.set(`created[${op}]`, String(value));
  for (const [key, value] of Object.entries(query.metadata ?? {})) params.set(`metadata[${key}]`, value);
  for (const id of query.ids ?? []) params.append("ids[]", id);
  if (query.starting_after) params.set("starting_after", query.starting_after);
  if (query.ending_before) params.set("ending_before", query.ending_before);
  return params.toString();
}

/** A search clause's quoted value (the API's language: single quotes, `\'` escapes one). */
function quoted(value: string): string {
  return `'${value.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
}

/** The filters as one search query, for the search box's starting point ("search instead"). */
export function searchQueryOf(filters: ResourceFilters): string {
  const clauses: string[] = [];
  if (filters.status) clauses.push(`status:${quoted(filters.status)}`);
  if (filters.metaKey) clauses.push(`metadata[${quoted(filters.metaKey)}]:${quoted(filters.metaValue ?? "")}`);
  if (filters.from) clauses.push(`created>=${dayBound(filters.from, false)}`);
  if (filters.to) clauses.push(`created<=${dayBound(filters.to, true)}`);
  return clauses.join(" AND ");
}

/** Filters without the cursors: what a filter change starts from (back to the first page). */
export function firstPage(filters: ResourceFilters): ResourceFilters {
  const { after: _a, before: _b, page: _p, ...rest } = filters;
  return rest;
}

/** Whether any filter (not a cursor) is set. */
export function isFiltered(filters: ResourceFilters): boolean {
  return Object.keys(firstPage(filters)).length > 0;
}
