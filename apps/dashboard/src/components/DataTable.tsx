import { Fragment, type ReactNode } from "react";

/**
 * A column of a table: its heading, its cell for a row, and the cell's class: `text` for free text that may wrap
 * anywhere (names, metadata, URLs, paths, messages), `when` for a date and time.
 */
export interface Column<Row> {
  readonly header: string;
  readonly cell: (row: Row) => ReactNode;
  readonly className?: string;
}

/**
 * A table of rows by its columns (every table of the dashboard); a row's key is its `id` unless `rowKey` says.
 * `detail` is what a row shows under it across the whole width (a response body), or null. Each cell carries its
 * column's heading as `data-label`: where the table is narrower than its columns need, the stylesheet lays each row
 * out as a block of "heading: value" lines (the headings stay in the table for screen readers).
 */
export function DataTable<Row>({
  caption,
  columns,
  rows,
  rowKey = (row) => (row as { id: string }).id,
  detail,
  rowClass,
}: {
  caption: string;
  columns: readonly Column<Row>[];
  rows: readonly Row[];
  rowKey?: (row: Row) => string;
  detail?: (row: Row) => ReactNode | null;
  /** A class for a row (a failing endpoint's is marked). */
  rowClass?: (row: Row) => string | undefined;
}) {
  return (
    <div className="table-wrap">
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
          {rows.map((row) => {
            const more = detail?.(row) ?? null;
            return (
              <Fragment key={rowKey(row)}>
                <tr className={[more === null ? "" : "has-detail", rowClass?.(row) ?? ""].join(" ").trim() || undefined}>
                  {columns.map((c) => (
                    <td key={c.header} className={c.className} data-label={c.header}>
                      {/* One box for the cell's content: stacked, a cell is a grid of its heading and this. */}
                      <div className="cell">{c.cell(row)}</div>
                    </td>
                  ))}
                </tr>
                {more !== null && (
                  <tr className="detail">
                    <td colSpan={columns.length}>{more}</td>
                  </tr>
                )}
              </Fragment>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
