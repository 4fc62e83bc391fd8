import type { WebhookAttempt } from "../api/client";
import { type Column, DataTable } from "./DataTable";
import { IdLink } from "./IdLink";
import { Button, StatusBadge, Time } from "./ui";

/** The columns a page may leave out because every row has the same value and the page already says it. */
export type SameForEveryRow = "event" | "endpoint";

function attemptColumns(omit: readonly SameForEveryRow[]): Column<WebhookAttempt>[] {
  return [
    { header: "Attempt", cell: (a) => <code className="id">{a.id}</code> },
    ...(omit.includes("event") ? [] : [{ header: "Event", cell: (a: WebhookAttempt) => <IdLink id={a.event} /> }]),
    ...(omit.includes("endpoint") ? [] : [{ header: "Endpoint", cell: (a: WebhookAttempt) => <IdLink id={a.webhook_endpoint} /> }]),
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
          <span>{a.response_status ?? "no response"}</span> <span className="help">{a.duration_ms} ms</span>
        </>
      ),
    },
    { header: "Trigger", cell: (a) => a.trigger },
    { header: "When", cell: (a) => <Time seconds={a.created} />, className: "when" },
  ];
}

/**
 * Attempts with their response status; the first KiB of the body the receiver answered opens under its attempt,
 * across the table's width (in a cell of its own it would squeeze the table or run past it).
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
  onResend?: (a: WebhookAttempt) => void;
  resendBusy?: boolean;
}) {
  const resend: Column<WebhookAttempt>[] = onResend
    ? [
        {
          header: "Resend",
          cell: (a) => (
            <Button busy={resendBusy} onClick={() => onResend(a)} aria-label={`Resend ${a.event} to ${a.webhook_endpoint}`}>
              Resend
            </Button>
          ),
        },
      ]
    : [];
  return (
    <DataTable
      caption={caption}
      columns={[...attemptColumns(omit), ...resend]}
      rows={attempts}
      detail={(a) =>
        a.response_body === null || a.response_body === "" ? null : (
          <details>
            <summary>Response body of {a.id}</summary>
            <pre className="body">{a.response_body}</pre>
          </details>
        )
      }
    />
  );
}
