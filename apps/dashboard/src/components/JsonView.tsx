import { useMemo } from "react";
import { CopyButton } from "./CopyButton";

/** The text's JSON value, or none when it is not JSON (a receiver's HTML or plain text). */
export function parseJson(text: string): { readonly ok: true; readonly value: unknown } | { readonly ok: false } {
  const trimmed = text.trim();
  if (!/^[[{"\d-]|^(true|false|null)$/.test(trimmed)) return { ok: false };
  try {
    return { ok: true, value: JSON.parse(trimmed) as unknown };
  } catch {
    return { ok: false };
  }
}

/**
 * JSON as a tree to read (CONTRACT.md section 13: data is shown as text, never as HTML): every object and array a
 * native disclosure (`<details>`: keyboard and screen readers know it), open to `openDepth` levels, values coloured by
 * kind, with a button that copies it pretty-printed. Given `text` (a receiver's response body, which may be anything),
 * it shows the tree when the text is JSON and the text as it is otherwise.
 */
export function JsonView({ value, text, label, openDepth = 2 }: { value?: unknown; text?: string; label: string; openDepth?: number }) {
  const parsed = useMemo(() => (text === undefined ? { ok: true as const, value } : parseJson(text)), [text, value]);
  const copied = parsed.ok ? JSON.stringify(parsed.value, null, 2) : (text ?? "");
  return (
    <section className="json-view" aria-label={label}>
      <div className="json-tools">
        <CopyButton value={copied} label="Copy" name={`Copy ${label.toLowerCase()}`} />
      </div>
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable from the keyboard (axe: scrollable-region-focusable) */}
      <div className="json" tabIndex={0}>
        {parsed.ok ? <JsonNode value={parsed.value} depth={0} openDepth={openDepth} last /> : <pre className="json-text">{text}</pre>}
      </div>
    </section>
  );
}

function JsonNode({ name, value, depth, openDepth, last }: { name?: string; value: unknown; depth: number; openDepth: number; last: boolean }) {
  const key = name === undefined ? null : <span className="jv-key">{JSON.stringify(name)}: </span>;
  const comma = last ? null : <span className="jv-punct">,</span>;
  if (value !== null && typeof value === "object") {
    const array = Array.isArray(value);
    const entries: [string, unknown][] = array ? value.map((v, i) => [String(i), v]) : Object.entries(value as Record<string, unknown>);
    const [open, close] = array ? ["[", "]"] : ["{", "}"];
    if (entries.length === 0)
      return (
        <div className="jv-line">
          {key}
          <span className="jv-punct">
            {open}
            {close}
          </span>
          {comma}
        </div>
      );
    return (
      <details className="jv-node" open={depth < openDepth}>
        <summary>
          {key}
          <span className="jv-punct">{open}</span>
          <span className="jv-count">
            {" "}
            {entries.length} {array ? (entries.length === 1 ? "item" : "items") : entries.length === 1 ? "key" : "keys"} {close}
            {comma}
          </span>
        </summary>
        <div className="jv-children">
          {entries.map(([k, v], i) => (
            <JsonNode key={k} name={array ? undefined : k} value={v} depth={depth + 1} openDepth={openDepth} last={i === entries.length - 1} />
          ))}
        </div>
        <div className="jv-line">
          <span className="jv-punct">{close}</span>
          {comma}
        </div>
      </details>
    );
  }
  const kind = value === null ? "null" : typeof value;
  return (
    <div className="jv-line">
      {key}
      <span className={`jv-${kind}`}>{JSON.stringify(value)}</span>
      {comma}
    </div>
  );
}
