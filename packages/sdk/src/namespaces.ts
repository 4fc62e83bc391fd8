import type { RequestOptions } from "./options.js";
import { type ListPage, listCall, type SearchPage, searchCall } from "./paging.js";
import { fillPath } from "./query.js";
import type { RequestSender } from "./request.js";
import type { OperationRow, OperationTable } from "./table.js";

type Method = (...args: unknown[]) => unknown;

/**
 * The method a row of the table stands for: its path parameters first (in the path's order), then its parameters
 * when it takes any (the query of a GET or DELETE, the JSON body of a POST), then the call's options.
 */
export function methodOf(row: OperationRow, sender: RequestSender): Method {
  const ids = (row.path.match(/\{[A-Za-z_]+\}/g) ?? []).length;
  return (...args: unknown[]) => {
    const path = fillPath(row.path, args.slice(0, ids) as string[]);
    const params = row.params ? (args[ids] as Record<string, unknown> | undefined) : undefined;
    const options = args[row.params ? ids + 1 : ids] as RequestOptions | undefined;
    const send = (query: Record<string, unknown> | undefined) =>
      sender.json<never>({
        method: row.verb,
        path,
        ...(row.verb === "POST" ? { json: query ?? {} } : { query }),
        options,
      });
    if (row.kind === "list") return listCall<ListPage>(send, params);
    if (row.kind === "search") return searchCall<SearchPage>(send, params);
    return send(params);
  };
}

/** Each namespace of the table as an object of methods; `custom` rows are left to the hand-written methods. */
export function namespacesOf(table: OperationTable, sender: RequestSender): Record<string, Record<string, Method>> {
  const namespaces: Record<string, Record<string, Method>> = {};
  for (const [namespace, rows] of Object.entries(table)) {
    const methods: Record<string, Method> = {};
    for (const [name, row] of Object.entries(rows)) if (row.kind !== "custom") methods[name] = methodOf(row, sender);
    namespaces[namespace] = methods;
  }
  return namespaces;
}
