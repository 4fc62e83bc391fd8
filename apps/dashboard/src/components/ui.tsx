import { type ComponentProps, type ReactNode, useEffect, useRef, useState } from "react";
import { useAuth } from "../app/auth";
import { missingScopeReason } from "../lib/scopes";
import { formatTime } from "../lib/time";
import type { Scope } from "../session";

/** Pretty-printed JSON, as text (no HTML from the data ever). */
export function Json({ value, label }: { value: unknown; label: string }) {
  return (
    <section aria-label={label}>
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable from the keyboard (axe: scrollable-region-focusable) */}
      <pre className="json" tabIndex={0}>
        {JSON.stringify(value, null, 2)}
      </pre>
    </section>
  );
}

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
  confirmLabel,
  onConfirm,
  disabled,
  busy,
}: {
  label: string;
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
      <Button ref={first} className="danger" disabled={disabled} busy={busy} onClick={() => ask(true)}>
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

export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge badge-${status.replace(/[^a-z_]/g, "")}`}>{status}</span>;
}

/**
 * A time as `formatTime` writes it, in a `<time>` whose date and clock each stay on one line: a narrow column
 * breaks it between the two, never inside the date.
 */
export function Time({ seconds }: { seconds: number | null | undefined }) {
  const text = formatTime(seconds);
  const space = text.indexOf(" ");
  if (seconds === null || seconds === undefined || space < 0) return <span>{text}</span>;
  return (
    <time dateTime={new Date(seconds * 1000).toISOString()}>
      <span className="nowrap">{text.slice(0, space)}</span> <span className="nowrap">{text.slice(space + 1)}</span>
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

/** Copies a value (a webhook secret) to the clipboard, saying so. */
export function CopyButton({ value, label }: { value: string; label: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      onClick={() => {
        void navigator.clipboard?.writeText(value).then(
          () => setCopied(true),
          () => setCopied(false),
        );
      }}
    >
      {copied ? "Copied" : label}
    </button>
  );
}
