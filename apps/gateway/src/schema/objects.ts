import { ApiError } from "../errors.js";

/** A JSON Schema fragment (OpenAPI 3.1 dialect). */
export type JsonSchema = Record<string, unknown>;

/** A reference to a named schema of the document's components. */
export const schemaRef = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });

/** One field of a public object: how it is described, and how it is read from its source. */
export interface Field<S> {
  readonly schema: JsonSchema;
  readonly value: (source: S) => unknown;
}

export const field = <S>(schema: JsonSchema, value: (source: S) => unknown): Field<S> => ({ schema, value });

/** A field with one fixed value, such as `object: "resource"`. */
export const constant = <S>(value: string | boolean): Field<S> => ({
  schema: { type: typeof value, const: value },
  value: () => value,
});

/**
 * A public object, written once: its fields in wire order render a response,
 * and the same fields describe it in the OpenAPI document (`name` under
 * components, `uses` the named objects it refers to).
 */
export interface PublicObject<S> {
  readonly name: string;
  readonly schema: JsonSchema;
  readonly uses: readonly PublicObject<never>[];
  /** The wire form; a missing source is a bug of core's answer (500). */
  render(source: S | undefined): Record<string, unknown>;
  /**
   * The wire form's JSON text, exactly `JSON.stringify(render(source))`, when the object can write it without
   * building the wire form first (a page of items core sent as JSON text: `Page.itemsJson`); else undefined.
   */
  text?(source: S | undefined): string | undefined;
}

/** A success body: its JSON text, and the object it was written from when there was one (the request log keeps it). */
export interface RenderedAnswer {
  readonly text: string;
  readonly object?: Record<string, unknown>;
}

/** The answer of `object` for `source`: its own text when it writes one, else the wire form and its JSON text. */
export function renderAnswer<S>(object: PublicObject<S>, source: S | undefined): RenderedAnswer {
  const text = object.text?.(source);
  if (text !== undefined) return { text };
  const wire = object.render(source);
  return { text: JSON.stringify(wire), object: wire };
}

export function publicObject<S>(name: string, fields: Readonly<Record<string, Field<S>>>, uses: readonly PublicObject<never>[] = []): PublicObject<S> {
  const entries = Object.entries(fields);
  return {
    name,
    uses,
    schema: objectSchema(Object.fromEntries(entries.map(([key, f]) => [key, f.schema]))),
    render(source) {
      if (source === undefined) throw ApiError.internal();
      const out: Record<string, unknown> = {};
      for (const [key, f] of entries) out[key] = f.value(source);
      return out;
    },
  };
}

/** Every field required, none other allowed, in wire order. */
function objectSchema(properties: Readonly<Record<string, JsonSchema>>): JsonSchema {
  return { type: "object", additionalProperties: false, required: Object.keys(properties), properties };
}

/** JSON text core rendered (an event's `data`, a job); anything else is a bug of core's answer (500). */
export function coreJson(text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw ApiError.internal();
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw ApiError.internal();
  return parsed as Record<string, unknown>;
}

/**
 * A public object core renders once (its `job.*` events show the same rendering): described here by the
 * schemas of its fields in wire order, answered as core's JSON text has it.
 */
export function renderedObject<S>(
  name: string,
  fields: Readonly<Record<string, JsonSchema>>,
  json: (source: S) => string,
  uses: readonly PublicObject<never>[] = [],
): PublicObject<S> {
  return {
    name,
    uses,
    schema: objectSchema(fields),
    render(source) {
      if (source === undefined) throw ApiError.internal();
      return coreJson(json(source));
    },
  };
}

/** One page of a list answer: what `listOf` renders from. */
export interface Page<S> {
  readonly items: readonly S[];
  readonly hasMore: boolean;
  /**
   * Instead of `items`: the items' public objects as one JSON array text, as core rendered them (a resource list
   * or search with `as_json`); written into the answer as it is.
   */
  readonly itemsJson?: string;
}

/** A JSON array text core rendered (a page's items); anything else is a bug of core's answer (500). */
function coreJsonArray(text: string): unknown[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw ApiError.internal();
  }
  if (!Array.isArray(parsed)) throw ApiError.internal();
  return parsed;
}

/** A page's `data`: its items rendered, or core's JSON text of them parsed. */
function pageData<S>(item: PublicObject<S>, page: Page<S>): unknown[] {
  return page.itemsJson !== undefined ? coreJsonArray(page.itemsJson) : page.items.map((source) => item.render(source));
}

/**
 * An envelope with its `data` last, as JSON text: the other fields as `JSON.stringify` writes them, then core's
 * text of the items as it is, so the bytes are those of `JSON.stringify(render(page))`. Core's text is not parsed
 * here: its shape is core's contract (resources/render.ts), checked by the tests of both.
 */
function envelopeText(head: Record<string, unknown>, itemsJson: string): string {
  const fields = JSON.stringify(head);
  return `${fields.slice(0, -1)},"data":${itemsJson}}`;
}

/**
 * The list envelope of an object: `{object: "list", url, has_more, data}`; `extra` fields (a list's facts beside its
 * page, such as the files' usage) come after `has_more`, `data` stays last.
 */
export function listOf<S, P extends Page<S> = Page<S>>(
  item: PublicObject<S>,
  url: string,
  maxItems: number,
  extra: Readonly<Record<string, Field<P>>> = {},
): PublicObject<P> {
  const list = publicObject<P>(
    `${item.name}List`,
    {
      object: constant("list"),
      url: field({ type: "string", const: url }, () => url),
      has_more: field({ type: "boolean" }, (page) => page.hasMore),
      ...extra,
      data: field({ type: "array", maxItems, items: schemaRef(item.name) }, (page) => pageData(item, page)),
    },
    [item as PublicObject<never>],
  );
  return withPageText(list, (page) => ({
    object: "list",
    url,
    has_more: page.hasMore,
    ...Object.fromEntries(Object.entries(extra).map(([name, f]) => [name, f.value(page)])),
  }));
}

/** A page's envelope that writes its own text when core sent the items as JSON text (`Page.itemsJson`). */
function withPageText<S, P extends Page<S>>(envelope: PublicObject<P>, head: (page: P) => Record<string, unknown>): PublicObject<P> {
  return {
    ...envelope,
    text: (page) => (page?.itemsJson !== undefined ? envelopeText(head(page), page.itemsJson) : undefined),
  };
}

/** One page of a search answer: what `searchResultOf` renders from. */
export interface SearchPage<S> extends Page<S> {
  /** Where the next page starts, or null at the end. */
  readonly nextPage: string | null;
}

/** Stripe's search envelope of an object: `{object: "search_result", url, has_more, next_page, data}`. */
export function searchResultOf<S>(item: PublicObject<S>, url: string, maxItems: number): PublicObject<SearchPage<S>> {
  const result = publicObject<SearchPage<S>>(
    `${item.name}SearchResult`,
    {
      object: constant("search_result"),
      url: field({ type: "string", const: url }, () => url),
      has_more: field({ type: "boolean" }, (page) => page.hasMore),
      next_page: field(
        { type: ["string", "null"], description: "Pass as `page` to get the next page of the same query; null at the end." },
        (page) => page.nextPage,
      ),
      data: field({ type: "array", maxItems, items: schemaRef(item.name) }, (page) => pageData(item, page)),
    },
    [item as PublicObject<never>],
  );
  return withPageText(result, (page) => ({ object: "search_result", url, has_more: page.hasMore, next_page: page.nextPage }));
}

/** The deletion result of an object: `{id, object, deleted: true}`. */
export function deletedOf(item: PublicObject<never>, object: string, id: JsonSchema): PublicObject<{ readonly id: string }> {
  return publicObject<{ readonly id: string }>(`Deleted${item.name}`, {
    id: field(id, (deleted) => deleted.id),
    object: constant(object),
    deleted: constant(true),
  });
}
