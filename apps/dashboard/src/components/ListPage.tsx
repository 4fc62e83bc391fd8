import type { UseQueryResult } from "@tanstack/react-query";
import { type ReactNode, useState } from "react";
import { type Column, DataTable } from "./DataTable";
import { ErrorNotice } from "./ErrorNotice";
import { usePageTitle } from "../lib/title";
import { PageHeader, useDisclosure } from "./Disclosure";
import { ActionForm, Loading, ScopeNote, Section } from "./ui";

/** One filter of a list page: a text box, a day or a choice; its value lives in the page's URL. */
export interface FilterField {
  readonly name: string;
  readonly label: string;
  /** The control's id (its label points at it); `<idPrefix>-<name>` unless given. */
  readonly id?: string;
  readonly kind?: "text" | "date" | "select";
  /** A select's choices, after its empty choice: a value that is its own label, or a value and its label. */
  readonly options?: readonly (string | { readonly value: string; readonly label: string })[];
  /** The label of a select's empty choice. */
  readonly anyLabel?: string;
  readonly placeholder?: string;
  readonly wide?: boolean;
}

/** Filter values by field name: strings only, a missing one is unset. */
export type FilterValues = Readonly<Partial<Record<string, string>>>;

/**
 * How a page's filters are shown and applied: "change" navigates as each control changes (the controls sit in the
 * list's section); "submit" is a form of its own section, applied by its button.
 */
export type FilterSpec =
  | { readonly apply: "change"; readonly idPrefix: string; readonly fields: readonly FilterField[] }
  | {
      readonly apply: "submit";
      readonly idPrefix: string;
      readonly fields: readonly FilterField[];
      readonly section: string;
      readonly formLabel: string;
      readonly submitLabel?: string;
      /** A Clear button beside the submit one. */
      readonly clearable?: boolean;
      /** More in the filter section, after the form (it sees the form's unapplied values). */
      readonly after?: (draft: FilterValues) => ReactNode;
    };

export interface PagerButton {
  readonly label: string;
  readonly disabled: boolean;
  readonly go: () => void;
}

interface ListData<Row> {
  readonly data: readonly Row[];
  readonly has_more: boolean;
}

export interface ListPageProps<Row extends { id: string }, Data extends ListData<Row>> {
  readonly title: string;
  /** Buttons beside the page's heading ("New ..."); the Filters button joins them for a form of filters. */
  readonly actions?: ReactNode;
  /** Sections above the filters (the forms the actions open). */
  readonly children?: ReactNode;
  /** Shown instead of the filters and the list (the server lacks the API). */
  readonly unavailable?: ReactNode;
  readonly filters: FilterSpec;
  /** The filters as the URL has them now, cursors left out. */
  readonly values: FilterValues;
  /** Applies filters: the page navigates to their first page. */
  readonly onFilter: (values: FilterValues) => void;
  readonly list: {
    readonly title: string;
    readonly caption: string;
    /** What is loading, for the loading line. */
    readonly what: string;
    /** Why this key may not read the list (the scope it lacks), or null. */
    readonly reason?: string | null;
    readonly query: UseQueryResult<Data>;
    readonly columns: readonly Column<Row>[];
    readonly empty: string;
    readonly pager: (page: Data) => readonly PagerButton[];
    /** Beside the list's heading (a live tail's switch). */
    readonly actions?: ReactNode;
    /** A class for a row. */
    readonly rowClass?: (row: Row) => string | undefined;
  };
}

/** A list page: its filters (described, not written out), the list's table, by cursor, and its pager. */
export function ListPage<Row extends { id: string }, Data extends ListData<Row>>({
  title,
  actions,
  children,
  unavailable,
  filters,
  values,
  onFilter,
  list,
}: ListPageProps<Row, Data>) {
  const { query, reason } = list;
  usePageTitle(title);
  // The filters' form is out of the way until asked for, and open when the URL holds filters already.
  const filtering = useDisclosure(Object.keys(values).length > 0);
  const inline = filters.apply === "change" && (
    <div className="form form-inline">
      <FilterFields spec={filters} values={values} onChange={(name, value) => onFilter(applied({ ...values, [name]: value }))} />
    </div>
  );
  return (
    <div>
      <PageHeader title={title}>
        {actions}
        {filters.apply === "submit" && !unavailable && filtering.button("Filters")}
      </PageHeader>
      {children}
      {unavailable ?? (
        <>
          {filters.apply === "submit" && filtering.body(<FilterForm spec={filters} values={values} onFilter={onFilter} />)}
          <Section title={list.title} actions={list.actions}>
            <ScopeNote reason={reason ?? null} />
            {inline}
            {query.isPending && !reason && <Loading what={list.what} />}
            <ErrorNotice error={query.error} />
            {query.data && (
              <>
                <DataTable caption={list.caption} columns={list.columns} rows={query.data.data} rowClass={list.rowClass} />
                {query.data.data.length === 0 && <p className="empty">{list.empty}</p>}
                <Pager buttons={list.pager(query.data)} />
              </>
            )}
          </Section>
        </>
      )}
    </div>
  );
}

/** The values to navigate to: trimmed, empty ones left out (the URL never holds an empty filter). */
function applied(values: FilterValues): FilterValues {
  return Object.fromEntries(Object.entries(values).flatMap(([name, value]) => (value && value.trim() !== "" ? [[name, value.trim()]] : [])));
}

function FilterForm({
  spec,
  values,
  onFilter,
}: {
  spec: Extract<FilterSpec, { apply: "submit" }>;
  values: FilterValues;
  onFilter: (values: FilterValues) => void;
}) {
  const [draft, setDraft] = useState<FilterValues>(() => Object.fromEntries(spec.fields.map((f) => [f.name, values[f.name]])));
  return (
    <Section title={spec.section}>
      <ActionForm label={spec.formLabel} onSubmit={() => onFilter(applied(draft))}>
        <FilterFields spec={spec} values={draft} onChange={(name, value) => setDraft((d) => ({ ...d, [name]: value }))} />
        <div className="actions">
          <button type="submit">{spec.submitLabel ?? "Apply"}</button>
          {spec.clearable && (
            <button
              type="button"
              className="secondary"
              onClick={() => {
                setDraft({});
                onFilter({});
              }}
            >
              Clear
            </button>
          )}
        </div>
      </ActionForm>
      {spec.after?.(draft)}
    </Section>
  );
}

/** A filter spec's controls (the page's form draws them). */
export function FilterFields({ spec, values, onChange }: { spec: FilterSpec; values: FilterValues; onChange: (name: string, value: string) => void }) {
  return spec.fields.map((field) => {
    const id = field.id ?? `${spec.idPrefix}-${field.name}`;
    const value = values[field.name] ?? "";
    return (
      <div className={field.wide ? "field field-wide" : "field"} key={field.name}>
        <label htmlFor={id}>{field.label}</label>
        {field.kind === "select" ? (
          <select id={id} value={value} onChange={(e) => onChange(field.name, e.target.value)}>
            <option value="">{field.anyLabel ?? "Any"}</option>
            {(field.options ?? []).map((option) =>
              typeof option === "string" ? (
                <option key={option} value={option}>
                  {option}
                </option>
              ) : (
                <option key={option.value} value={option.value}>
                  {option.label}
                </option>
              ),
            )}
          </select>
        ) : (
          <input
            id={id}
            type={field.kind === "date" ? "date" : undefined}
            value={value}
            placeholder={field.placeholder}
            onChange={(e) => onChange(field.name, e.target.value)}
          />
        )}
      </div>
    );
  });
}

export function Pager({ buttons }: { buttons: readonly PagerButton[] }) {
  return (
    <nav className="pager" aria-label="Pages">
      {buttons.map((b) => (
        <button type="button" key={b.label} disabled={b.disabled} onClick={b.go}>
          {b.label}
        </button>
      ))}
    </nav>
  );
}

/** Where a cursor list stands: after the last row of a page (older), or before the first (newer). */
export interface Cursor {
  readonly after?: string;
  readonly before?: string;
}

/** The buttons of a list paged by cursor, newest first: First page, Newer (where the page offers it) and Older. */
export function cursorPager(at: Cursor, page: ListData<{ id: string }>, go: (cursor: Cursor) => void, withNewer: boolean): PagerButton[] {
  const first = page.data[0]?.id;
  const last = page.data.at(-1)?.id;
  const atStart = !at.after && !at.before;
  return [
    { label: "First page", disabled: atStart, go: () => go({}) },
    ...(withNewer ? [{ label: "Newer", disabled: atStart || (!at.after && !page.has_more) || !first, go: () => go({ before: first! }) }] : []),
    { label: "Older", disabled: (!at.before && !page.has_more) || !last, go: () => go({ after: last! }) },
  ];
}
