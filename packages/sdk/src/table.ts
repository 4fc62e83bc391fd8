/** How an operation answers: one JSON object, a list page, a search page, or something written by hand (`custom`). */
export type OperationKind = "json" | "list" | "search" | "custom";

/** One row of the generated method table (src/gen/operations.ts). */
export interface OperationRow {
  readonly verb: "GET" | "POST" | "DELETE";
  /** The path with `{name}` for each path parameter, given in order as the method's first arguments. */
  readonly path: string;
  readonly kind: OperationKind;
  /** Whether the method takes parameters (after the path's). */
  readonly params: boolean;
}

export type OperationTable = Readonly<Record<string, Readonly<Record<string, OperationRow>>>>;
