import { ensurePositionIndex, insertPositioned, readCausally, STREAM_READ_CONCERN, tenantKey, type PositionCounter } from "@rms/positions";
import { requestIdFloorAt } from "@rms/proto";
import { BSON, MongoBulkWriteError, MongoInvalidArgumentError, type Collection, type Db, type Document, type Filter, type IndexSpecification } from "mongodb";
import type { Indexed } from "../indexes.js";

export const REQUEST_LOGS_COLLECTION = "request_logs";
/** Each tenant's last stream position of its request logs (`@rms/positions`), taken by the recorder's batch insert. */
export const REQUEST_LOG_POSITIONS_COLLECTION = "request_log_positions";
/** The index a stream's catch-up reads: a tenant's records of one source by position. */
export const REQUEST_LOG_POSITION_INDEX = "tenant_source_position";

/** Where a request came from: a dashboard session's key is `dashboard`, every other key `api` (docs/request-logs.md). */
export type RequestSource = "api" | "dashboard";
/** What a list or stream shows: one source (the API's by default), or both. */
export type SourceFilter = RequestSource | "all";

/** One request as stored: the public object's fields (CONTRACT.md section 12), its tenant and its expiry. */
export interface RequestLogDocument {
  /** The request's `Request-Id` (time-ordered: `newRequestId`). */
  _id: string;
  account: string;
  livemode: boolean;
  method: string;
  path: string;
  status: number;
  /** `2xx`, `4xx`, ...: the `status` filter's classes, served by an index of their own. */
  status_class: string;
  /** Absent (not null) when the answer was no error: the partial indexes hold only the errors. */
  error_type?: string;
  error_code?: string;
  api_key: string;
  key_kind: "secret" | "restricted" | "publishable";
  /** Absent when the request had none (partial index). */
  idempotency_key?: string;
  idempotent_replayed: boolean;
  duration_ms: number;
  client_ip: string;
  user_agent: string | null;
  /** Unix seconds. */
  created: number;
  /**
   * The parameters as parsed (redacted, cut), as JSON text: a client's names are text here, never the database's
   * field names, so any name is storable (a NUL byte, `$where`, `a.b`). Null when none were read.
   */
  request_params_json: string | null;
  /** The answer's JSON (redacted, cut) as text, as `request_params_json`; null when it was not JSON. */
  response_body_json: string | null;
  /** Absent on records written before it was: those count as `api`. */
  source?: RequestSource;
  /** The record's place in its tenant's stream (`@rms/positions`), given by the batch insert; absent before streams. */
  pos?: number;
  /** When the TTL index removes it: `created` + REQUEST_LOGS_RETENTION_DAYS. */
  expires_at: Date;
}

/**
 * A record as read back: one written by a gateway of an earlier release holds the parameters and the answer as
 * documents (`request_params`, `response_body`) instead of JSON text; it expires with its retention like any other.
 */
export type StoredRequestLog = Omit<RequestLogDocument, "request_params_json" | "response_body_json"> & {
  request_params_json?: string | null;
  response_body_json?: string | null;
  request_params?: Record<string, unknown> | null;
  response_body?: Record<string, unknown> | null;
};

function parsedJson(text: string | null | undefined): Record<string, unknown> | null {
  if (text === null || text === undefined) return null;
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return null;
  }
}

/** A stored record's `request_params`, whichever way it was written. */
export function requestParamsOf(record: StoredRequestLog): Record<string, unknown> | null {
  return record.request_params_json !== undefined ? parsedJson(record.request_params_json) : (record.request_params ?? null);
}

/** A stored record's `response_body`, whichever way it was written. */
export function responseBodyOf(record: StoredRequestLog): Record<string, unknown> | null {
  return record.response_body_json !== undefined ? parsedJson(record.response_body_json) : (record.response_body ?? null);
}

/** The filters of `GET /v1/request_logs` that pick an index (the `created` range and the cursors go with any). */
export interface RequestLogFilter {
  status?: number;
  status_class?: string;
  method?: string;
  path?: string;
  api_key?: string;
  idempotency_key?: string;
  error_code?: string;
}

export type FilterField = keyof RequestLogFilter;

/**
 * The indexes of the list, one per accepted combination of filters (by its fields, sorted), each
 * `(account, livemode, source, [fields], _id)`: the equality fields first, then the id, so an index yields exactly
 * the matches of a page in order (a source set is one range per source, merged in id order) and a `created` range or
 * a cursor is a range of ids on it (docs/request-logs.md).
 */
const LIST_INDEXES: readonly { readonly fields: readonly FilterField[]; readonly name: string; readonly partial?: Document }[] = [
  { fields: [], name: "tenant_source_id" },
  { fields: ["status"], name: "tenant_source_status_id" },
  { fields: ["status_class"], name: "tenant_source_status_class_id" },
  { fields: ["method"], name: "tenant_source_method_id" },
  { fields: ["path"], name: "tenant_source_path_id" },
  { fields: ["path", "method"], name: "tenant_source_path_method_id" },
  { fields: ["api_key"], name: "tenant_source_api_key_id" },
  { fields: ["idempotency_key"], name: "tenant_source_idempotency_key_id", partial: { idempotency_key: { $exists: true } } },
  { fields: ["error_code"], name: "tenant_source_error_code_id", partial: { error_code: { $exists: true } } },
];

/**
 * The condition on `source` of a list: a record written before the field existed (by a gateway of 1.4.0, also during a
 * rolling upgrade) has none and counts as `api` (`null` matches a missing field, and the index holds it as null). A
 * step of the next release gives those records `source: "api"` and this reads `api` alone (RELEASES.md).
 */
export function sourceCondition(source: SourceFilter): RequestSource | { $in: (RequestSource | null)[] } {
  if (source === "dashboard") return "dashboard";
  return { $in: source === "api" ? ["api", null] : ["api", "dashboard", null] };
}

const combination = (fields: readonly string[]) => [...fields].sort().join("+");
const INDEX_OF = new Map(LIST_INDEXES.map((index) => [combination(index.fields), index]));

/** The filter combinations the list accepts, for its documentation and its refusal message. */
export const ACCEPTED_COMBINATIONS: readonly (readonly FilterField[])[] = LIST_INDEXES.map((index) => index.fields);

/** The index that serves these filters, or undefined when none does (the list answers 400). */
export function indexFor(filter: RequestLogFilter): string | undefined {
  const fields = (Object.keys(filter) as FilterField[]).filter((field) => filter[field] !== undefined);
  return INDEX_OF.get(combination(fields))?.name;
}

/** A page request: tenant, filters, bounds on the id (from `created` and a cursor) and the direction. */
export interface RequestLogQuery {
  readonly account: string;
  readonly livemode: boolean;
  readonly filter: RequestLogFilter;
  /** Absent: `api`. */
  readonly source?: SourceFilter;
  /** Unix seconds, as the public filter takes them. */
  readonly created?: { gt?: number; gte?: number; lt?: number; lte?: number };
  readonly startingAfter?: string;
  readonly endingBefore?: string;
  readonly limit: number;
}

/** A record the database will never take (a retry would be refused the same way), and why. */
export interface RefusedRecord {
  readonly id: string;
  readonly reason: string;
}

/** Most bytes of one document the database takes (its `maxBsonObjectSize`). */
const DOCUMENT_BYTES_MAX = 16 * 1024 * 1024;

/** Whether the driver refused the insert before sending it, for a document it cannot encode (the whole insert is refused). */
function refusedByDriver(error: unknown): boolean {
  return BSON.BSONError.isBSONError(error) || error instanceof MongoInvalidArgumentError;
}

/** Why the driver cannot encode a record, or undefined when it can. */
function unencodable(record: RequestLogDocument): string | undefined {
  try {
    const bytes = BSON.calculateObjectSize(record);
    if (bytes > DOCUMENT_BYTES_MAX) return `the record is ${bytes} bytes, more than a document may hold`;
    BSON.serialize(record);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/**
 * The records of a batch the database will never take, from the error that stopped its insert: those the driver
 * cannot encode (it refuses the whole insert for one), or the one the server answered a write error of its own for
 * (the insert is ordered, in a transaction: it stops at the first such record). None when the error is about the
 * batch as a whole (the database away, a write concern not met, a transaction that may commit when run again).
 */
function refusedRecords(error: unknown, batch: readonly RequestLogDocument[]): RefusedRecord[] {
  if (refusedByDriver(error)) {
    return batch.flatMap((record) => {
      const reason = unencodable(record);
      return reason === undefined ? [] : [{ id: record._id, reason }];
    });
  }
  if (!(error instanceof MongoBulkWriteError) || error.hasErrorLabel("TransientTransactionError") || error.hasErrorLabel("RetryableWriteError")) return [];
  const ids = new Set(batch.map((record) => record._id));
  const writeErrors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
  return writeErrors
    .filter((e) => e.code !== 11000)
    .flatMap((e) => {
      const id = (e.getOperation() as { _id?: unknown } | undefined)?._id;
      return typeof id === "string" && ids.has(id) ? [{ id, reason: e.errmsg ?? `code ${e.code}` }] : [];
    });
}

/** The gateway's request logs in MongoDB: written in batches by the recorder, read by the list and retrieve operations. */
export class RequestLogStore implements Indexed {
  readonly collection: Collection<RequestLogDocument>;
  private readonly positions: Collection<PositionCounter>;

  constructor(private readonly db: Db) {
    this.collection = db.collection<RequestLogDocument>(REQUEST_LOGS_COLLECTION);
    this.positions = db.collection<PositionCounter>(REQUEST_LOG_POSITIONS_COLLECTION);
  }

  async ensureIndexes(): Promise<void> {
    for (const index of LIST_INDEXES) {
      const key: IndexSpecification = { account: 1, livemode: 1, source: 1, ...Object.fromEntries(index.fields.map((field) => [field, 1])), _id: 1 };
      await this.collection.createIndex(key, { name: index.name, ...(index.partial ? { partialFilterExpression: index.partial } : {}) });
    }
    // A stream's catch-up (docs/streams.md): a tenant's records of a source by position.
    await ensurePositionIndex(this.collection as unknown as Collection<Document>, REQUEST_LOG_POSITION_INDEX, { source: 1 });
    // Retention (REQUEST_LOGS_RETENTION_DAYS) is the document's own `expires_at`.
    await this.collection.createIndex({ expires_at: 1 }, { name: "expires_at", expireAfterSeconds: 0 });
    // The list's indexes before `source` led them (`tenant_id`, `tenant_status_id`, ...) stay while a gateway of 1.4.0
    // may query them; a step of the next release drops them (RELEASES.md).
  }

  /**
   * One batch, each record with its tenant's next stream position, in one transaction with the tenants' counters
   * (`@rms/positions`: positions in commit order, so a stream resumed by position misses none); a record already
   * there (a batch sent again after an unknown outcome) keeps its place. A record the database refuses (one no retry
   * would write) is set apart and answered (the recorder drops it), and the rest are inserted: one record never holds
   * its batch. Throws when the batch as a whole did not go (the database is away, a transaction that may succeed again).
   */
  async insertBatch(batch: readonly RequestLogDocument[]): Promise<readonly RefusedRecord[]> {
    try {
      await insertPositioned({ documents: this.collection as Collection<RequestLogDocument & { _id: string }>, counters: this.positions }, batch);
      return [];
    } catch (error) {
      const refused = refusedRecords(error, batch);
      if (refused.length === 0) throw error;
      const apart = new Set(refused.map((record) => record.id));
      const rest = batch.filter((record) => !apart.has(record._id));
      return rest.length === 0 ? refused : [...refused, ...(await this.insertBatch(rest))];
    }
  }

  /**
   * A stream's catch-up (docs/streams.md): up to `limit` records of the tenant's `source` after position `after`
   * (or after the record `afterId`), read at majority after `afterClusterTime`, with the tenant's head read first in
   * the same causal session. The other filters apply to what is read (the caller's).
   */
  async readLog(
    tenant: { account: string; livemode: boolean },
    start: { position: number } | { id: string } | null,
    source: SourceFilter,
    limit: number,
    afterClusterTime: bigint,
  ): Promise<{ records: (RequestLogDocument & { pos: number })[]; through: number; head: number } | null> {
    return readCausally(this.db.client, afterClusterTime, async (session) => {
      const options = { session, readConcern: STREAM_READ_CONCERN };
      const head = (await this.positions.findOne({ _id: tenantKey(tenant) }, options))?.pos ?? 0;
      if (start === null) return { records: [], through: head, head };
      let after: number;
      if ("id" in start) {
        const at = await this.collection.findOne({ _id: start.id, account: tenant.account, livemode: tenant.livemode }, { ...options, projection: { pos: 1 } });
        // An unknown record (another tenant's, expired): the caller refuses the cursor.
        if (!at) return null;
        after = at.pos ?? 0;
      } else after = start.position;
      const query = this.logQuery(tenant, after, source, limit);
      const found = (await this.collection
        .find(query.filter, { ...options, sort: query.sort, hint: query.hint, limit: query.limit, projection: { expires_at: 0 } })
        .toArray()) as (RequestLogDocument & {
        pos: number;
      })[];
      const full = found.length > limit;
      const records = found.slice(0, limit);
      const last = records.at(-1)?.pos ?? after;
      return { records, through: full ? last : Math.max(last, head, after), head };
    });
  }

  /** The query of one page: its filter, sort and index (the explain test runs exactly this). */
  pageQuery(query: RequestLogQuery): { filter: Filter<RequestLogDocument>; sort: { _id: 1 | -1 }; hint: string; limit: number } {
    const hint = indexFor(query.filter);
    if (hint === undefined) throw new Error("no index serves this combination of filters");
    const id: Record<string, string> = {};
    const lower = (bound: string) => {
      if (id["$gte"] === undefined || bound > id["$gte"]) id["$gte"] = bound;
    };
    const upper = (bound: string) => {
      if (id["$lt"] === undefined || bound < id["$lt"]) id["$lt"] = bound;
    };
    const { created } = query;
    if (created?.gte !== undefined) lower(requestIdFloorAt(created.gte * 1000));
    if (created?.gt !== undefined) lower(requestIdFloorAt((created.gt + 1) * 1000));
    if (created?.lt !== undefined) upper(requestIdFloorAt(created.lt * 1000));
    if (created?.lte !== undefined) upper(requestIdFloorAt((created.lte + 1) * 1000));
    // A cursor is one more bound on the same range of ids: `starting_after` below it, `ending_before` above it.
    if (query.startingAfter !== undefined) upper(query.startingAfter);
    const range: Record<string, string> = { ...id };
    if (query.endingBefore !== undefined) range["$gt"] = query.endingBefore;
    const filter: Filter<RequestLogDocument> = {
      account: query.account,
      livemode: query.livemode,
      source: sourceCondition(query.source ?? "api") as Filter<RequestLogDocument>["source"],
      ...(query.filter as Filter<RequestLogDocument>),
      ...(Object.keys(range).length > 0 ? { _id: range } : {}),
    };
    return { filter, sort: { _id: query.endingBefore !== undefined ? 1 : -1 }, hint, limit: query.limit + 1 };
  }

  /** The query of one catch-up read of a stream: the tenant's records of `source` after position `after` (the explain test runs exactly this). */
  logQuery(
    tenant: { account: string; livemode: boolean },
    after: number,
    source: SourceFilter,
    limit: number,
  ): { filter: Filter<RequestLogDocument>; sort: { pos: 1 }; hint: string; limit: number } {
    // Only records written with positions have a source: no `null` here (unlike the list's `sourceCondition`).
    const bySource = source === "all" ? { $in: ["api", "dashboard"] as RequestSource[] } : source;
    return {
      filter: { account: tenant.account, livemode: tenant.livemode, source: bySource, pos: { $gt: after } },
      sort: { pos: 1 },
      hint: REQUEST_LOG_POSITION_INDEX,
      limit: limit + 1,
    };
  }

  /** One page, newest first, and whether more follow (in the page's direction). */
  async list(query: RequestLogQuery): Promise<{ data: StoredRequestLog[]; hasMore: boolean }> {
    const { filter, sort, hint, limit } = this.pageQuery(query);
    const found: StoredRequestLog[] = await this.collection.find(filter, { sort, hint, limit, projection: { expires_at: 0 } }).toArray();
    const hasMore = found.length > query.limit;
    const data = found.slice(0, query.limit);
    if (sort._id === 1) data.reverse();
    return { data, hasMore };
  }

  /** One record of this account and mode, by its id; null when there is none (another tenant's is none too). */
  async retrieve(account: string, livemode: boolean, id: string): Promise<StoredRequestLog | null> {
    return this.collection.findOne({ _id: id, account, livemode }, { projection: { expires_at: 0 } });
  }
}
