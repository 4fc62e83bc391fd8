import { requestIdFloorAt } from "@rms/proto";
import { BSON, MongoBulkWriteError, MongoInvalidArgumentError, type Collection, type Db, type Document, type Filter, type IndexSpecification } from "mongodb";
import type { Indexed } from "../indexes.js";

export const REQUEST_LOGS_COLLECTION = "request_logs";

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
 * `(account, livemode, [fields], _id)`: the equality fields first, then the id, so an index yields exactly the
 * matches of a page in order and a `created` range or a cursor is a range of ids on it (docs/request-logs.md).
 */
const LIST_INDEXES: readonly { readonly fields: readonly FilterField[]; readonly name: string; readonly partial?: Document }[] = [
  { fields: [], name: "tenant_id" },
  { fields: ["status"], name: "tenant_status_id" },
  { fields: ["status_class"], name: "tenant_status_class_id" },
  { fields: ["method"], name: "tenant_method_id" },
  { fields: ["path"], name: "tenant_path_id" },
  { fields: ["path", "method"], name: "tenant_path_method_id" },
  { fields: ["api_key"], name: "tenant_api_key_id" },
  { fields: ["idempotency_key"], name: "tenant_idempotency_key_id", partial: { idempotency_key: { $exists: true } } },
  { fields: ["error_code"], name: "tenant_error_code_id", partial: { error_code: { $exists: true } } },
];

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
 * The records the server refused of an unordered insert (each one's own write error: it was not written, and a retry
 * would be refused the same way); the others were written. A record already there (11000: a batch sent again) is
 * no refusal. Throws the error when the outcome of the batch is not known record by record (a network error, a
 * write concern not met), so that the whole batch is tried again.
 */
function refusedByServer(error: unknown, batch: readonly RequestLogDocument[]): RefusedRecord[] {
  if (!(error instanceof MongoBulkWriteError)) throw error;
  const writeErrors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
  if (writeErrors.length === 0 || error.result?.getWriteConcernError() !== undefined) throw error;
  return writeErrors.filter((e) => e.code !== 11000).map((e) => ({ id: batch[e.index]?._id ?? "", reason: e.errmsg ?? `code ${e.code}` }));
}

/** The gateway's request logs in MongoDB: written in batches by the recorder, read by the list and retrieve operations. */
export class RequestLogStore implements Indexed {
  readonly collection: Collection<RequestLogDocument>;

  constructor(db: Db) {
    this.collection = db.collection<RequestLogDocument>(REQUEST_LOGS_COLLECTION);
  }

  async ensureIndexes(): Promise<void> {
    for (const index of LIST_INDEXES) {
      const key: IndexSpecification = { account: 1, livemode: 1, ...Object.fromEntries(index.fields.map((field) => [field, 1])), _id: 1 };
      await this.collection.createIndex(key, { name: index.name, ...(index.partial ? { partialFilterExpression: index.partial } : {}) });
    }
    // Retention (REQUEST_LOGS_RETENTION_DAYS) is the document's own `expires_at`.
    await this.collection.createIndex({ expires_at: 1 }, { name: "expires_at", expireAfterSeconds: 0 });
  }

  /**
   * One unordered insert of a batch: every record is written but those the database refuses, which are answered
   * (the recorder drops them; no retry would take them). A record already there (a batch sent again after an
   * unknown outcome) is not an error. The driver refuses a whole insert for one document it cannot encode: then
   * those are set apart and the rest inserted. Throws when the batch as a whole did not go (the database is away).
   */
  async insertBatch(batch: readonly RequestLogDocument[]): Promise<readonly RefusedRecord[]> {
    try {
      await this.collection.insertMany(batch as RequestLogDocument[], { ordered: false });
      return [];
    } catch (error) {
      if (!refusedByDriver(error)) return refusedByServer(error, batch);
      const refused: RefusedRecord[] = [];
      const encodable = batch.filter((record) => {
        const reason = unencodable(record);
        if (reason !== undefined) refused.push({ id: record._id, reason });
        return reason === undefined;
      });
      if (refused.length === 0) throw error;
      return encodable.length === 0 ? refused : [...refused, ...(await this.insertBatch(encodable))];
    }
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
      ...(query.filter as Filter<RequestLogDocument>),
      ...(Object.keys(range).length > 0 ? { _id: range } : {}),
    };
    return { filter, sort: { _id: query.endingBefore !== undefined ? 1 : -1 }, hint, limit: query.limit + 1 };
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
