import { RESOURCE_FILTER_LIMITS, RpcError, SEARCH_CLAUSES_MAX } from "@rms/proto";
import { errors } from "../errors.js";
import type { CreatedRange } from "../storage/keyset-list.js";
import { filterRules, type NameMatch, type ResourceFilter } from "./filter.js";
import type { ResourceStatusName } from "./model.js";
import { codePointLength, NAME_MAX_CODE_POINTS } from "./validation.js";

/**
 * The search query language (CONTRACT.md section 3, "Search", in ../shared/docs/): a tokenizer and a
 * recursive-descent parser whose every refusal is 400 `search_query_invalid` naming the position (from 1)
 * of the problem. Grammar (keywords case-insensitive; a space between clauses is AND, as in Stripe's):
 *
 *   query  := group ( [AND] group )*
 *   group  := clause ( OR clause )*            -- OR joins clauses on the same field only, not `created`
 *   clause := field ( ':' | '~' | '>' | '>=' | '<' | '<=' ) value
 *   field  := status | name | created | metadata '[' string ']'
 *   value  := string | integer                 -- 'single' or "double" quoted; \' \" \\ escape
 *
 * `status:` and `metadata['k']:` take a quoted string, `name:` an exact name and `name~` a case-insensitive
 * prefix of at least 2 characters, `created` an integer (Unix seconds) with `:`, `>`, `>=`, `<` or `<=`.
 * At most 10 clauses and 5 metadata keys. Values follow the filter's own rules (filter.ts). The result is the
 * one resource filter (AND of the groups, each group's values as "any of"), or `none` when the clauses
 * cannot all hold (`status:'active' AND status:'paused'`).
 */

export type ParsedSearch = { filter: ResourceFilter; none: false } | { filter: null; none: true };

type Punct = "[" | "]" | ":" | "~" | ">" | ">=" | "<" | "<=";
type Token =
  | { kind: "word" | "string" | "number"; text: string; at: number }
  | { kind: "punct"; text: Punct; at: number }
  | { kind: "end"; text: ""; at: number };

type Field = { kind: "status" | "name" | "created" } | { kind: "metadata"; key: string };
interface Clause {
  field: Field;
  op: Punct;
  value: string;
  at: number;
}

/** 400 `search_query_invalid`: what is wrong and where (1-based). */
function invalid(at: number, message: string): RpcError {
  return errors.invalid("search_query_invalid", `Invalid query at position ${at}: ${message}`, "query");
}

/** A filter rule's refusal as the query's, at the clause's value. */
function ruled<T>(at: number, check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (!(error instanceof RpcError)) throw error;
    throw invalid(at, error.message.charAt(0).toLowerCase() + error.message.slice(1));
  }
}

const ESCAPES = new Set(["'", '"', "\\"]);

function tokenize(query: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < query.length) {
    const c = query[i]!;
    const at = i + 1;
    if (/\s/.test(c)) {
      i++;
    } else if (c === "'" || c === '"') {
      let text = "";
      let j = i + 1;
      while (j < query.length && query[j] !== c) {
        if (query[j] === "\\") {
          const next = query[j + 1];
          if (next === undefined || !ESCAPES.has(next)) throw invalid(j + 1, `unknown escape '\\${next ?? ""}' (only \\', \\" and \\\\ are escapes).`);
          text += next;
          j += 2;
        } else {
          text += query[j++];
        }
      }
      if (j >= query.length) throw invalid(at, `the string that starts here is not closed with ${c}.`);
      tokens.push({ kind: "string", text, at });
      i = j + 1;
    } else if (/[0-9]/.test(c)) {
      const text = /^[0-9]+/.exec(query.slice(i))![0];
      tokens.push({ kind: "number", text, at });
      i += text.length;
    } else if (/[A-Za-z_]/.test(c)) {
      const text = /^[A-Za-z0-9_]+/.exec(query.slice(i))![0];
      tokens.push({ kind: "word", text, at });
      i += text.length;
    } else if (c === "<" || c === ">") {
      const text = (query[i + 1] === "=" ? `${c}=` : c) as Punct;
      tokens.push({ kind: "punct", text, at });
      i += text.length;
    } else if (c === "[" || c === "]" || c === ":" || c === "~") {
      tokens.push({ kind: "punct", text: c, at });
      i++;
    } else if (c === "-") {
      throw invalid(at, "negation ('-') is not supported.");
    } else {
      // The whole character, not one UTF-16 unit of it: half of an emoji is not text.
      throw invalid(at, `unexpected character '${String.fromCodePoint(query.codePointAt(i)!)}'.`);
    }
  }
  tokens.push({ kind: "end", text: "", at: query.length + 1 });
  return tokens;
}

const FIELDS = "status, name, metadata['key'] or created";

const describeToken = (token: Token) => (token.kind === "end" ? "the end of the query" : token.kind === "string" ? "a string" : `'${token.text}'`);

const fieldLabel = (field: Field) => (field.kind === "metadata" ? `metadata['${field.key}']` : field.kind);

const isKeyword = (token: Token, word: "AND" | "OR") => token.kind === "word" && token.text.toUpperCase() === word;

class Parser {
  private position = 0;
  private clauses = 0;
  private readonly metadataKeys = new Set<string>();

  constructor(private readonly tokens: Token[]) {}

  private peek(): Token {
    return this.tokens[this.position]!;
  }

  private next(): Token {
    const token = this.tokens[this.position]!;
    if (token.kind !== "end") this.position++;
    return token;
  }

  query(): Clause[][] {
    const groups = [this.group()];
    while (this.peek().kind !== "end") {
      if (isKeyword(this.peek(), "AND")) this.next();
      groups.push(this.group());
    }
    return groups;
  }

  private group(): Clause[] {
    const group = [this.clause()];
    while (isKeyword(this.peek(), "OR")) {
      const or = this.next();
      const clause = this.clause();
      if (group[0]!.field.kind === "created" || clause.field.kind === "created") throw invalid(or.at, "created clauses can only be joined by AND.");
      if (fieldLabel(clause.field) !== fieldLabel(group[0]!.field)) {
        throw invalid(
          clause.at,
          `OR joins clauses on the same field only (${fieldLabel(clause.field)} after ${fieldLabel(group[0]!.field)}); join different fields with AND.`,
        );
      }
      group.push(clause);
    }
    return group;
  }

  private clause(): Clause {
    const start = this.next();
    if (start.kind !== "word" || isKeyword(start, "AND") || isKeyword(start, "OR"))
      throw invalid(start.at, `expected a clause (a field: ${FIELDS}), found ${describeToken(start)}.`);
    if (++this.clauses > SEARCH_CLAUSES_MAX) throw invalid(start.at, `a query has at most ${SEARCH_CLAUSES_MAX} clauses.`);
    const field = this.field(start);
    const op = this.next();
    if (op.kind !== "punct" || op.text === "[" || op.text === "]")
      throw invalid(op.at, `expected an operator (:, ~, >, >=, < or <=) after ${fieldLabel(field)}, found ${describeToken(op)}.`);
    const value = this.next();
    const at = value.at;
    if (field.kind === "created") {
      if (op.text === "~") throw invalid(op.at, "created takes :, >, >=, < or <=.");
      if (value.kind !== "number") throw invalid(at, `created takes an integer (Unix seconds), found ${describeToken(value)}.`);
      ruled(at, () => filterRules.time(BigInt(value.text), "created"));
      return { field, op: op.text, value: value.text, at: start.at };
    }
    if (value.kind !== "string") throw invalid(at, `${fieldLabel(field)} takes a quoted string, found ${describeToken(value)}.`);
    if (op.text === "~" && field.kind !== "name") throw invalid(op.at, `only name takes ~ (a prefix); ${fieldLabel(field)} takes :.`);
    if (op.text !== ":" && op.text !== "~") throw invalid(op.at, `only created takes ${op.text}; ${fieldLabel(field)} takes :.`);
    if (field.kind === "status") ruled(at, () => filterRules.status(value.text, "status"));
    if (field.kind === "metadata") ruled(at, () => filterRules.metadata({ key: field.key, value: value.text }, "metadata"));
    if (field.kind === "name") {
      const length = codePointLength(value.text);
      if (op.text === "~" && length < 2) throw invalid(at, "a name prefix has at least 2 characters.");
      if (length === 0) throw invalid(at, "name takes a non-empty string.");
      if (length > NAME_MAX_CODE_POINTS) throw invalid(at, `a name has at most ${NAME_MAX_CODE_POINTS} characters.`);
    }
    return { field, op: op.text, value: value.text, at: start.at };
  }

  private field(start: Token): Field {
    switch (start.text) {
      case "status":
      case "name":
      case "created":
        return { kind: start.text };
      case "metadata": {
        const open = this.next();
        const key = this.next();
        const close = this.next();
        if (open.text !== "[" || key.kind !== "string" || close.text !== "]") throw invalid(open.at, "a metadata field is written metadata['key'].");
        // The key's own rules, here at the key (with a value the value rules accept; the value is checked at the value).
        ruled(key.at, () => filterRules.metadata({ key: key.text, value: "-" }, "metadata"));
        this.metadataKeys.add(key.text);
        const most = RESOURCE_FILTER_LIMITS.search.metadataKeys;
        if (this.metadataKeys.size > most) throw invalid(start.at, `a query names at most ${most} metadata keys.`);
        return { kind: "metadata", key: key.text };
      }
      default:
        throw invalid(start.at, `unknown field '${start.text.slice(0, 40)}' (fields: ${FIELDS}).`);
    }
  }
}

/** Where two name conditions both hold: the narrower one, or none. */
function bothNames(a: NameMatch, b: NameMatch): NameMatch | undefined {
  const [la, lb] = [a.value.toLowerCase(), b.value.toLowerCase()];
  if (a.prefix && b.prefix) return la.startsWith(lb) ? a : lb.startsWith(la) ? b : undefined;
  if (a.prefix) return lb.startsWith(la) ? b : undefined;
  if (b.prefix) return la.startsWith(lb) ? a : undefined;
  return a.value === b.value ? a : undefined;
}

/** Name conditions without repeats (a prefix is compared lowercased). */
function distinctNames(matches: readonly NameMatch[]): NameMatch[] {
  return [...new Map(matches.map((m) => [m.prefix ? `~${m.value.toLowerCase()}` : `:${m.value}`, m])).values()];
}

function intersectNames(left: readonly NameMatch[], right: readonly NameMatch[]): NameMatch[] {
  return distinctNames(left.flatMap((a) => right.flatMap((b) => bothNames(a, b) ?? [])));
}

const intersect = <T>(left: Set<T> | undefined, right: Set<T>): Set<T> => (left ? new Set([...left].filter((v) => right.has(v))) : right);

function createdBound(range: CreatedRange, op: Punct, value: number): void {
  const raise = (bound: "gt" | "gte") => (range[bound] = Math.max(range[bound] ?? value, value));
  const lower = (bound: "lt" | "lte") => (range[bound] = Math.min(range[bound] ?? value, value));
  if (op === ">") raise("gt");
  if (op === ">=" || op === ":") raise("gte");
  if (op === "<") lower("lt");
  if (op === "<=" || op === ":") lower("lte");
}

/** The filter of the parsed groups: AND of the groups, each group's values as "any of". */
function filterOf(groups: Clause[][]): ParsedSearch {
  let status: Set<string> | undefined;
  let names: NameMatch[] | undefined;
  const metadata = new Map<string, Set<string>>();
  const created: CreatedRange = {};
  for (const group of groups) {
    const field = group[0]!.field;
    const values = new Set(group.map((c) => c.value));
    if (field.kind === "status") status = intersect(status, values);
    if (field.kind === "metadata") metadata.set(field.key, intersect(metadata.get(field.key), values));
    if (field.kind === "name") {
      const matches = group.map((c) => ({ value: c.value, prefix: c.op === "~" }));
      names = names ? intersectNames(names, matches) : distinctNames(matches);
    }
    if (field.kind === "created") for (const clause of group) createdBound(created, clause.op, Number(clause.value));
  }
  if (status?.size === 0 || names?.length === 0 || [...metadata.values()].some((v) => v.size === 0)) return { filter: null, none: true };
  const filter: ResourceFilter = {};
  if (status) filter.status = status.size === 1 ? ([...status][0] as ResourceStatusName) : ([...status] as ResourceStatusName[]);
  if (metadata.size > 0) filter.metadata = [...metadata].flatMap(([k, values]) => [...values].map((v) => ({ k, v })));
  if (Object.keys(created).length > 0) filter.created = created;
  if (names) filter.name = names;
  return { filter, none: false };
}

/** Parses a search query into the resource filter, or refuses it with 400 `search_query_invalid` at the position of the problem. */
export function parseSearchQuery(query: string): ParsedSearch {
  if (query.trim() === "")
    throw errors.invalid(
      "search_query_invalid",
      "Invalid query at position 1: the query is empty; give at least one clause, such as status:'active'.",
      "query",
    );
  return filterOf(new Parser(tokenize(query)).query());
}
