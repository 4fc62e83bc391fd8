import { useState, type ReactNode } from "react";
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

/** A button that asks to confirm before it acts (deleting): the second press does it. */
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
  if (!asking) {
    return (
      <button type="button" className="danger" disabled={disabled || busy} onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  }
  return (
    <fieldset className="confirm">
      <legend>Are you sure? This cannot be undone.</legend>
      <button type="button" className="danger" disabled={busy} onClick={onConfirm}>
        {confirmLabel}
      </button>
      <button type="button" className="secondary" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </fieldset>
  );
}

/** A form that runs `onSubmit` in place of the browser's submit (every form of the dashboard); `inline` lays its fields in a row. */
export function ActionForm({ label, inline = true, onSubmit, children }: { label: string; inline?: boolean; onSubmit: () => void; children: ReactNode }) {
  return (
    <form
      className={inline ? "form form-inline" : "form"}
      aria-label={label}
      onSubmit={(e) => {
        e.preventDefault();
        onSubmit();
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
