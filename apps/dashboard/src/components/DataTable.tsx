import type { ReactNode } from "react";

/** A column of a table: its heading, its cell for a row, and the cell's class (`when`, `url`, `meta`). */
export interface Column<Row> {
  readonly header: string;
  readonly cell: (row: Row) => ReactNode;
  readonly className?: string;
}

/** A table of rows by its columns (every table of the dashboard); a row's key is its `id` unless `rowKey` says. */
export function DataTable<Row>({
  caption,
  columns,
  rows,
  rowKey = (row) => (row as { id: string }).id,
}: {
  caption: string;
  columns: readonly Column<Row>[];
  rows: readonly Row[];
  rowKey?: (row: Row) => string;
}) {
  return (
    <table className="table">
      <caption className="sr-only">{caption}</caption>
      <thead>
        <tr>
          {columns.map((c) => (
            <th scope="col" key={c.header}>
              {c.header}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={rowKey(row)}>
            {columns.map((c) => (
              <td key={c.header} className={c.className}>
                {c.cell(row)}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
