import { useState } from "react";
import type { WebhookAttempt } from "../api/client";
import { type Column, DataTable } from "./DataTable";
import { IdLink } from "./IdLink";
import { JsonView } from "./JsonView";
import { Button, StatusBadge, StatusCode, Time } from "./ui";

/** The columns a page may leave out because every row has the same value and the page already says it. */
export type SameForEveryRow = "event" | "endpoint";

function attemptColumns(omit: readonly SameForEveryRow[], bodies: { open: ReadonlySet<string>; toggle: (id: string) => void }): Column<WebhookAttempt>[] {
  return [
    { header: "When", cell: (a) => <Time seconds={a.created} />, className: "when" },
    {
      header: "Status",
      cell: (a) => (
        <>
          <StatusBadge status={a.status} />
          {a.failure_code && (
            <>
              {" "}
              <code className="failure">{a.failure_code}</code>
            </>
          )}
        </>
      ),
    },
    {
      header: "Response",
      cell: (a) => (
        <>
          <StatusCode status={a.response_status} /> <span className="help">{a.duration_ms} ms</span>
          {a.response_body ? (
            <>
              {" "}
              <button
                type="button"
                className="link-button"
                aria-expanded={bodies.open.has(a.id)}
                aria-label={`Body of ${a.id}`}
                onClick={() => bodies.toggle(a.id)}
              >
                Body
              </button>
            </>
          ) : null}
        </>
      ),
    },
    ...(omit.includes("event") ? [] : [{ header: "Event", cell: (a: WebhookAttempt) => <IdLink id={a.event} /> }]),
    ...(omit.includes("endpoint") ? [] : [{ header: "Endpoint", cell: (a: WebhookAttempt) => <IdLink id={a.webhook_endpoint} /> }]),
    { header: "Trigger", cell: (a) => a.trigger },
    { header: "Attempt", cell: (a) => <code className="id">{a.id}</code> },
  ];
}

/** A receiver's response body, formatted when it is JSON; open when `open` (the latest failure's). */
export function ResponseBody({ attempt, open = false }: { attempt: WebhookAttempt; open?: boolean }) {
  if (attempt.response_body === null || attempt.response_body === "") return null;
  return (
    <details open={open} className="response-body">
      <summary>Response body of {attempt.id}</summary>
      <JsonView text={attempt.response_body} label={`Response body of ${attempt.id}`} />
    </details>
  );
}

/**
 * Attempts with their response status, newest first; the first KiB of the body the receiver answered opens (its Body
 * button) under its attempt, across the table's width, formatted when it is JSON.
 */
export function AttemptsTable({
  attempts,
  caption,
  omit = [],
  onResend,
  resendBusy,
}: {
  attempts: readonly WebhookAttempt[];
  caption: string;
  omit?: readonly SameForEveryRow[];
  /** Resend an attempt's event; absent: no Resend column. `canResend` says for which rows. */
  onResend?: (a: WebhookAttempt) => void;
  resendBusy?: boolean;
}) {
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());
  const toggle = (id: string) =>
    setOpen((current) => {
      const next = new Set(current);
      if (!next.delete(id)) next.add(id);
      return next;
    });
  const resend: Column<WebhookAttempt>[] = onResend
    ? [
        {
          header: "Resend",
          cell: (a) => (
            <Button className="small" busy={resendBusy} onClick={() => onResend(a)} aria-label={`Resend ${a.event} to ${a.webhook_endpoint}`}>
              Resend
            </Button>
          ),
        },
      ]
    : [];
  return (
    <DataTable
      caption={caption}
      columns={[...attemptColumns(omit, { open, toggle }), ...resend]}
      rows={attempts}
      detail={(a) => (a.response_body && open.has(a.id) ? <JsonView text={a.response_body} label={`Response body of ${a.id}`} /> : null)}
    />
  );
}
