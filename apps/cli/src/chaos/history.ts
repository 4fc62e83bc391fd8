// The history of `npm run chaos`: every client operation of the resources phase (each attempt of a create or an
// update, each read, each list walk page by page, each search, and the final reads after the run healed), with
// its invocation and completion times on the client's clock, its arguments and its answer, written one JSON
// object per line. checker.ts judges it (docs/scaling.md, "The checked history").
import { createWriteStream, type WriteStream } from "node:fs";
import type { HttpsReply } from "../stack/processes.js";

/** A resource as an answer showed it: enough to know which write it reflects. */
export interface Seen {
  id: string;
  /** The resource's name, `chaos-<i>`: ties the object to the load's resource `i` even before its create is acknowledged. */
  name: string;
  /** `metadata.step`: the last update applied (0 after the create alone). */
  step: number;
  /** The steps whose own key `metadata.s<k>` is present: every update applied, whatever came after it. */
  steps: number[];
  /** `created` (Unix seconds): the list's order. */
  created: number;
}

/**
 * How an attempt ended: `ok` (2xx), `fail` (an answer that says the request did not or will not take effect:
 * a 4xx, a 503), `unknown` (no answer, a timeout, a 500: it may have taken effect).
 */
export type Outcome = "ok" | "fail" | "unknown";

interface OpBase {
  /** Order of completion in the file. */
  n: number;
  /** The client (one of the load's or the readers' concurrent loops) that ran it: its own operations never overlap. */
  process: string;
  /** Client clock, ms since the epoch (fractional). */
  invoked: number;
  completed: number;
  outcome: Outcome;
  /** HTTP status, absent when no answer came. */
  status?: number;
  /** The error's code (an answer's `error.code`, or `network`/`timeout`). */
  code?: string;
}

/** One attempt of a create (`step` 0) or an update (`step` k sets `metadata[step]=k` and `metadata[s<k>]=k`). */
export interface WriteOp extends OpBase {
  type: "write";
  /** The load's resource index (`name=chaos-<i>`). */
  i: number;
  step: number;
  /** The resource's id: the update's target; a create's only once answered. */
  id?: string;
  key: string;
  /** The answer's body as received (2xx and 4xx only): idempotent replays must repeat it. */
  body?: string;
  replayed?: boolean;
  /** The object an ok answer returned. */
  seen?: Seen;
}

/** `GET /v1/resources/{id}`: `seen` when found; `absent` on a 404. `final`: after the run healed. */
export interface ReadOp extends OpBase {
  type: "read";
  id: string;
  i: number;
  seen?: Seen;
  absent?: boolean;
  final?: boolean;
}

/** One page of a list walk. */
export interface ListPage {
  invoked: number;
  completed: number;
  starting_after: string | null;
  items: Seen[];
  has_more: boolean;
}

/** A list walk with `starting_after`, page by page (each page retried while the stack cannot answer); `ok` when it reached the end. */
export interface ListOp extends OpBase {
  type: "list";
  walk: number;
  limit: number;
  pages: ListPage[];
  final?: boolean;
}

/** `GET /v1/resources/search?query=name:'chaos-<i>'`: one page (a name matches one resource). */
export interface SearchOp extends OpBase {
  type: "search";
  i: number;
  query: string;
  items?: Seen[];
}

export type Op = WriteOp | ReadOp | ListOp | SearchOp;
/** An operation before it is numbered. */
export type NewOp = Op extends infer T ? (T extends Op ? Omit<T, "n"> : never) : never;

/** The client's clock for the history: ms since the epoch with sub-ms precision, monotonic. */
export const now = () => performance.timeOrigin + performance.now();

/** The resource as an answer's JSON shows it, or undefined when it is not one of the load's. */
export function seenOf(object: unknown): Seen | undefined {
  const o = object as { id?: unknown; name?: unknown; metadata?: Record<string, string>; created?: unknown } | null;
  if (!o || typeof o.id !== "string" || typeof o.name !== "string" || !/^chaos-\d+$/.test(o.name)) return undefined;
  const metadata = o.metadata ?? {};
  const steps = Object.keys(metadata)
    .filter((k) => /^s\d+$/.test(k))
    .map((k) => Number(k.slice(1)))
    .sort((a, b) => a - b);
  return { id: o.id, name: o.name, step: Number(metadata.step ?? 0), steps, created: Number(o.created) };
}

/** The index `i` of a `chaos-<i>` name. */
export const indexOf = (name: string) => Number(name.slice("chaos-".length));

/** An answer's error code, if it carries one. */
export function errorCode(body: string): string | undefined {
  try {
    return (JSON.parse(body) as { error?: { code?: string } }).error?.code;
  } catch {
    return undefined;
  }
}

/** How a reply (or its absence) ends an attempt. */
export function outcomeOf(reply: HttpsReply | undefined, error?: unknown): Pick<OpBase, "outcome" | "status" | "code"> {
  if (!reply) return { outcome: "unknown", code: /timeout/i.test(String((error as Error | undefined)?.message)) ? "timeout" : "network" };
  const code = reply.status >= 400 ? errorCode(reply.body) : undefined;
  const base = { status: reply.status, ...(code ? { code } : {}) };
  if (reply.status >= 200 && reply.status < 300) return { outcome: "ok", ...base };
  // A 500 (outcome_unknown, internal_error) or a 502/504 from a proxy may have taken effect; a 4xx and a 503 did not.
  if (reply.status >= 500 && reply.status !== 503) return { outcome: "unknown", ...base };
  return { outcome: "fail", ...base };
}

/** The history being recorded: kept in memory for the checker and appended to a JSONL file as operations complete. */
export class History {
  readonly ops: Op[] = [];
  private readonly out: WriteStream | undefined;

  constructor(readonly file?: string) {
    this.out = file ? createWriteStream(file, { flags: "w" }) : undefined;
  }

  add(op: NewOp): Op {
    const numbered = { n: this.ops.length, ...op } as Op;
    this.ops.push(numbered);
    this.out?.write(`${JSON.stringify(numbered)}\n`);
    return numbered;
  }

  close(): Promise<void> {
    const out = this.out;
    return out ? new Promise((resolve) => out.end(() => resolve())) : Promise.resolve();
  }
}

/** A write attempt as the history records it, from its reply (or the error that took its place). */
export function recordWrite(
  process: string,
  write: { i: number; step: number; key: string; id?: string },
  invoked: number,
  reply: HttpsReply | undefined,
  error?: unknown,
): NewOp {
  const completed = now();
  const outcome = outcomeOf(reply, error);
  let seen: Seen | undefined;
  if (outcome.outcome === "ok") {
    try {
      seen = seenOf(JSON.parse(reply!.body));
    } catch {
      seen = undefined;
    }
  }
  const executed = reply !== undefined && (outcome.outcome === "ok" || (reply.status >= 400 && reply.status < 500));
  return {
    type: "write",
    process,
    ...write,
    ...(seen && !write.id ? { id: seen.id } : {}),
    invoked,
    completed,
    ...outcome,
    ...(executed ? { body: reply.body } : {}),
    ...(reply?.headers["idempotent-replayed"] === "true" ? { replayed: true } : {}),
    ...(seen ? { seen } : {}),
  };
}
