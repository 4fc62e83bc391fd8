import { type ComponentProps, type ReactNode, useEffect, useRef, useState } from "react";
export { CopyButton } from "./CopyButton";
export { JsonView as Json } from "./JsonView";
import { useAuth } from "../app/auth";
import { missingScopeReason } from "../lib/scopes";
import { formatUtc, localParts } from "../lib/time";
import type { Scope } from "../session";

/** The reason a control needs a scope this key lacks, or null; the control is disabled and says why. */
export function useScopeReason(scope: Scope): string | null {
  const { scopes } = useAuth();
  return missingScopeReason(scopes ?? [], scope);
}

/** Says why the controls beside it are disabled. */
export function ScopeNote({ reason }: { reason: string | null }) {
  if (!reason) return null;
  return <p className="scope-note">{reason}</p>;
}

/**
 * A button whose action may be running (`busy`): it stays enabled and focusable, marked `aria-disabled`, and ignores
 * presses meanwhile. A button that turns `disabled` under the keyboard's focus drops the focus to the page's start, so a
 * keyboard user would have to tab through the whole page again after every action. `disabled` is for what the key or
 * the state does not allow.
 */
export function Button({ busy = false, type = "button", onClick, ...props }: ComponentProps<"button"> & { busy?: boolean }) {
  return (
    <button
      {...props}
      type={type}
      aria-disabled={busy || undefined}
      onClick={(e) => {
        if (busy) e.preventDefault();
        else onClick?.(e);
      }}
    />
  );
}

/**
 * A button that asks to confirm before it acts (deleting): the second press does it. The question takes the focus to
 * its Cancel (the harmless answer); Escape or Cancel puts the question away and the focus back on the first button.
 */
export function ConfirmButton({
  label,
  name,
  confirmLabel,
  onConfirm,
  disabled,
  busy,
}: {
  label: string;
  /** The first button's accessible name when its words alone are not enough (beginning with them). */
  name?: string;
  confirmLabel: string;
  onConfirm: () => void;
  disabled?: boolean;
  busy?: boolean;
}) {
  const [asking, setAsking] = useState(false);
  const first = useRef<HTMLButtonElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  const moveFocus = useRef(false);
  useEffect(() => {
    if (!moveFocus.current) return;
    moveFocus.current = false;
    (asking ? cancel : first).current?.focus();
  }, [asking]);
  const ask = (value: boolean) => {
    moveFocus.current = true;
    setAsking(value);
  };
  if (!asking) {
    return (
      <Button ref={first} className="danger" disabled={disabled} busy={busy} aria-label={name} onClick={() => ask(true)}>
        {label}
      </Button>
    );
  }
  return (
    <fieldset
      className="confirm"
      onKeyDown={(e) => {
        if (e.key !== "Escape") return;
        e.preventDefault();
        ask(false);
      }}
    >
      <legend>Are you sure? This cannot be undone.</legend>
      <Button className="danger" busy={busy} onClick={onConfirm}>
        {confirmLabel}
      </Button>
      <button ref={cancel} type="button" className="secondary" onClick={() => ask(false)}>
        Cancel
      </button>
    </fieldset>
  );
}

/** A form that runs `onSubmit` in place of the browser's submit (every form of the dashboard); `inline` lays its fields in a row. */
export function ActionForm({
  label,
  inline = true,
  busy = false,
  onSubmit,
  children,
}: {
  label: string;
  inline?: boolean;
  /** Its action is running: a submit (Enter in a field) is ignored until it ends. */
  busy?: boolean;
  onSubmit: () => void;
  children: ReactNode;
}) {
  return (
    <form
      className={inline ? "form form-inline" : "form"}
      aria-label={label}
      onSubmit={(e) => {
        e.preventDefault();
        if (!busy) onSubmit();
      }}
    >
      {children}
    </form>
  );
}

/** A select's options, each value its own label. */
export function Options({ values }: { values: readonly string[] }) {
  return values.map((value) => (
    <option key={value} value={value}>
      {value}
    </option>
  ));
}

export function Section({ title, children, actions }: { title: string; children: ReactNode; actions?: ReactNode }) {
  return (
    <section className="card" aria-label={title}>
      <header className="card-header">
        <h2>{title}</h2>
        {actions}
      </header>
      {children}
    </section>
  );
}

/** An HTTP status, coloured by its class (2xx, 3xx, 4xx, 5xx); 404 and 429 have their own shade. */
export function StatusCode({ status }: { status: number | null | undefined }) {
  if (status === null || status === undefined) return <span className="status-code status-none">no response</span>;
  const family = `${Math.floor(status / 100)}xx`;
  return <span className={`status-code status-${family}${status === 404 || status === 429 ? ` status-${status}` : ""}`}>{status}</span>;
}

/** A status as a badge coloured by its name's class (`badge-failed`), showing `label` when given. */
export function StatusBadge({ status, label }: { status: string; label?: string }) {
  return <span className={`badge badge-${status.replace(/[^a-z_]/g, "")}`}>{label ?? status}</span>;
}

/**
 * A time in local time (`formatTime`), its UTC time on hover (`title`), in a `<time>` whose date and clock each stay
 * on one line: a narrow column breaks it between the two, never inside the date.
 */
export function Time({ seconds }: { seconds: number | null | undefined }) {
  const parts = localParts(seconds);
  if (seconds === null || seconds === undefined || !parts) return <span>—</span>;
  return (
    <time dateTime={new Date(seconds * 1000).toISOString()} title={formatUtc(seconds)}>
      <span className="nowrap">{parts.date}</span> <span className="nowrap">{parts.clock}</span>
    </time>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p className="loading" role="status">
      Loading {what}…
    </p>
  );
}
