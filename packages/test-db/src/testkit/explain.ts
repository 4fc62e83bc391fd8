import type { CommandStartedEvent, Db, Document, MongoClient } from "mongodb";

/**
 * Query plans of the commands code really sends (ARCHITECTURE rule 7 in ../shared/docs/: every query has
 * an index, and a test proves it). A test runs the code under test over a client made with
 * `monitorCommands: true`, records the commands it sends (`CommandLog`), and explains each query among
 * them on the server with `executionStats` (`explainCommand`): the filter, sort and limit explained are
 * the ones the code built, so the test cannot pass while the code drifts to another shape.
 */

/** What one query cost, from `explain` with `executionStats`. */
export interface QueryPlan {
  /** The command and its collection, e.g. `find resources`, `update events`. */
  readonly operation: string;
  /** The query's shape: field names and operators, values left out (e.g. `{account, livemode, _id: {$lt}} sort {_id: -1} limit 21`). */
  readonly shape: string;
  /** Documents the query returned (for writes: the documents it matched). */
  readonly nReturned: number;
  readonly totalDocsExamined: number;
  readonly totalKeysExamined: number;
  /** Stage names of the winning plan, root first. */
  readonly stages: readonly string[];
  /** Indexes the winning plan reads. */
  readonly indexes: readonly string[];
  /** The command as explained (without session and cluster fields). */
  readonly command: Document;
}

/** Commands that read or write by a query; anything else (insert, getMore, killCursors, ...) has no plan. */
const QUERY_COMMANDS = ["find", "aggregate", "count", "distinct", "findAndModify", "update", "delete"] as const;

/** Fields the driver adds to a command that `explain` refuses or that belong to the session, not the query. */
const DRIVER_FIELDS = new Set([
  "$db",
  "lsid",
  "$clusterTime",
  "txnNumber",
  "$readPreference",
  "readConcern",
  "writeConcern",
  "maxTimeMS",
  "apiVersion",
  "apiStrict",
  "apiDeprecationErrors",
  "autocommit",
  "startTransaction",
  "batchSize",
  "singleBatch",
  "ordered",
  "bypassDocumentValidation",
]);

/** Records the commands sent through a client made with `monitorCommands: true`. */
export class CommandLog {
  private recording: Document[] | null = null;

  constructor(client: MongoClient) {
    client.on("commandStarted", (event: CommandStartedEvent) => {
      this.recording?.push(event.command);
    });
  }

  /** Runs `work` and returns its value with every command the client sent meanwhile, in order. */
  async during<T>(work: () => Promise<T>): Promise<{ value: T; commands: Document[] }> {
    if (this.recording) throw new Error("CommandLog: one recording at a time");
    const commands: Document[] = [];
    this.recording = commands;
    try {
      return { value: await work(), commands };
    } finally {
      this.recording = null;
    }
  }
}

/** True for a command that runs a query (the ones `explainCommand` explains). */
export function isQueryCommand(command: Document): boolean {
  return QUERY_COMMANDS.some((name) => name in command);
}

/**
 * Explains one recorded command with `executionStats` (a write is explained, not made again): a write
 * batch of several statements (`update`, `delete`) as one plan per statement. Throws when a plan scans
 * the collection. `database`: where to explain it (default: the database it was sent to), so a command
 * recorded on a copy of the data can be explained on data it did not change yet.
 */
export async function explainCommand(client: MongoClient, command: Document, options: { database?: string } = {}): Promise<QueryPlan[]> {
  const name = QUERY_COMMANDS.find((n) => n in command);
  if (!name) return [];
  const database = client.db(options.database ?? (command["$db"] as string));
  const base: Document = {};
  for (const [key, value] of Object.entries(command)) if (!DRIVER_FIELDS.has(key)) base[key] = value;
  const statements: Document[] =
    name === "update"
      ? (base["updates"] as Document[]).map((u) => ({ ...base, updates: [u] }))
      : name === "delete"
        ? (base["deletes"] as Document[]).map((d) => ({ ...base, deletes: [d] }))
        : [base];
  const plans: QueryPlan[] = [];
  for (const statement of statements) {
    const explained = await database.command({ explain: statement, verbosity: "executionStats" });
    const plan = planOf(`${name} ${String(command[name])}`, statement, explained);
    if (plan.stages.includes("COLLSCAN")) {
      throw new Error(`collection scan: ${plan.operation} ${plan.shape} (stages ${plan.stages.join(" > ")})`);
    }
    plans.push(plan);
  }
  return plans;
}

/** Runs `work`, then explains every query command it sent (see `explainCommand`). */
export async function explainDuring<T>(
  client: MongoClient,
  log: CommandLog,
  work: () => Promise<T>,
  options: { database?: string } = {},
): Promise<{ value: T; plans: QueryPlan[] }> {
  const { value, commands } = await log.during(work);
  const plans: QueryPlan[] = [];
  for (const command of commands) plans.push(...(await explainCommand(client, command, options)));
  return { value, plans };
}

/** A table of labelled plans, one line each, for a test's output (and the numbers of docs/database.md). */
export function planTable(rows: readonly { label: string; plan: QueryPlan }[]): string {
  const header = ["shape", "operation", "index", "nReturned", "docsExamined", "keysExamined"];
  const lines = rows.map(({ label, plan }) => [
    label,
    plan.operation,
    plan.indexes.join("+") || plan.stages.join(">"),
    String(plan.nReturned),
    String(plan.totalDocsExamined),
    String(plan.totalKeysExamined),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const format = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  return [format(header), format(widths.map((w) => "-".repeat(w))), ...lines.map(format)].join("\n");
}

/** The first value under `key` anywhere in `value` (explain nests per stage for aggregations). */
function find(value: unknown, key: string): Document | undefined {
  if (value === null || typeof value !== "object") return undefined;
  if (key in (value as Document)) return (value as Document)[key] as Document;
  for (const child of Object.values(value as Document)) {
    const found = find(child, key);
    if (found) return found;
  }
  return undefined;
}

/** Stages of a winning plan, root first (the slot-based engine nests the classic plan under `queryPlan`). */
function stagesOf(plan: Document | undefined): Document[] {
  if (!plan) return [];
  if (plan["queryPlan"]) return stagesOf(plan["queryPlan"] as Document);
  const children = [plan["inputStage"], ...((plan["inputStages"] as Document[] | undefined) ?? [])].filter(Boolean) as Document[];
  return [plan, ...children.flatMap(stagesOf)];
}

function planOf(operation: string, statement: Document, explained: Document): QueryPlan {
  const planner = find(explained, "queryPlanner");
  const stats = find(explained, "executionStats");
  if (!planner || !stats) throw new Error(`no plan in the explain of ${operation}: ${JSON.stringify(explained).slice(0, 500)}`);
  const stages = stagesOf(planner["winningPlan"] as Document);
  const root = (stats["executionStages"] ?? {}) as Document;
  const written = (root["nMatched"] ?? root["nWouldDelete"]) as number | undefined;
  return {
    operation,
    shape: shapeOfStatement(statement),
    nReturned: Math.max(Number(stats["nReturned"] ?? 0), Number(written ?? 0)),
    totalDocsExamined: Number(stats["totalDocsExamined"] ?? 0),
    totalKeysExamined: Number(stats["totalKeysExamined"] ?? 0),
    stages: stages.map((s) => String(s["stage"])),
    indexes: [...new Set(stages.filter((s) => s["indexName"]).map((s) => String(s["indexName"])))],
    command: statement,
  };
}

/** The filter, sort and limit of a statement, values left out. */
function shapeOfStatement(statement: Document): string {
  const parts: string[] = [];
  const add = (label: string, value: unknown, directions = false) => {
    if (value !== undefined) parts.push(label ? `${label} ${shapeOf(value, directions)}` : shapeOf(value, directions));
  };
  if ("find" in statement) {
    add("", statement["filter"] ?? {});
    add("sort", statement["sort"], true);
    if (statement["limit"] !== undefined) parts.push(`limit ${statement["limit"]}`);
  } else if ("findAndModify" in statement) {
    add("", statement["query"] ?? {});
    add("sort", statement["sort"], true);
  } else if ("update" in statement) {
    add("", (statement["updates"] as Document[])[0]?.["q"]);
  } else if ("delete" in statement) {
    add("", (statement["deletes"] as Document[])[0]?.["q"]);
  } else if ("count" in statement) {
    add("", statement["query"] ?? {});
  } else if ("aggregate" in statement) {
    add("", statement["pipeline"]);
  } else if ("distinct" in statement) {
    add("", statement["query"] ?? {});
  }
  return parts.join(" ");
}

/**
 * A value's shape: objects by their keys (operators kept, and numbers when `directions`: a sort), arrays of objects by
 * their shapes, of values by their length, other values as nothing.
 */
function shapeOf(value: unknown, directions = false): string {
  if (value instanceof Map) return shapeOf(Object.fromEntries(value), directions);
  if (Array.isArray(value))
    return value.some((v) => v !== null && typeof v === "object" && !isBsonValue(v)) ? `[${value.map((v) => shapeOf(v)).join(", ")}]` : `[${value.length}]`;
  if (value === null || typeof value !== "object" || isBsonValue(value)) return "";
  const entries = Object.entries(value as Document).map(([key, child]) => {
    if (directions && typeof child === "number") return `${key}: ${child}`;
    const inner = shapeOf(child);
    return inner ? `${key}: ${inner}` : key;
  });
  return `{${entries.join(", ")}}`;
}

function isBsonValue(value: object): boolean {
  return "_bsontype" in value || value instanceof Date;
}

/** Every stage of a plan, depth first. */
function stageTree(plan: Record<string, unknown>): Record<string, unknown>[] {
  const children = [plan["inputStage"], ...((plan["inputStages"] as unknown[] | undefined) ?? [])].filter(Boolean) as Record<string, unknown>[];
  return [plan, ...children.flatMap(stageTree)];
}

/** The winning plan of an `explain` answer (a find's, or an aggregation's first stage's), as `STAGE` or `IXSCAN(index)` names. */
export function winningStages(explained: Document): string[] {
  const planner = (explained["queryPlanner"] ?? explained["stages"]?.[0]?.["$cursor"]?.["queryPlanner"]) as { winningPlan: Record<string, unknown> };
  const winning = (planner.winningPlan["queryPlan"] ?? planner.winningPlan) as Record<string, unknown>;
  return stageTree(winning).map((s) => (s["indexName"] ? `${s["stage"]}(${s["indexName"]})` : String(s["stage"])));
}

/** How many keys each index of a collection holds (the server's own count, by `validate`). */
export async function keysPerIndex(db: Db, collection: string): Promise<Record<string, number>> {
  return (await db.command({ validate: collection }))["keysPerIndex"] as Record<string, number>;
}
