import type { WebhookAttempt } from "../api/client";
import { formatTime } from "../lib/time";
import { type Column, DataTable } from "./DataTable";
import { IdLink } from "./IdLink";
import { StatusBadge } from "./ui";

const ATTEMPT_COLUMNS: readonly Column<WebhookAttempt>[] = [
  { header: "Attempt", cell: (a) => <code>{a.id}</code> },
  { header: "Event", cell: (a) => <IdLink id={a.event} /> },
  { header: "Endpoint", cell: (a) => <IdLink id={a.webhook_endpoint} /> },
  {
    header: "Status",
    cell: (a) => (
      <>
        <StatusBadge status={a.status} />
        {a.failure_code && <span className="help"> {a.failure_code}</span>}
      </>
    ),
  },
  {
    header: "Response",
    cell: (a) => (
      <>
        <span>{a.response_status ?? "no response"}</span> <span className="help">{a.duration_ms} ms</span>
        {a.response_body !== null && a.response_body !== "" && (
          <details>
            <summary>Body</summary>
            <pre className="json">{a.response_body}</pre>
          </details>
        )}
      </>
    ),
  },
  { header: "Trigger", cell: (a) => a.trigger },
  { header: "When", cell: (a) => formatTime(a.created), className: "when" },
];

/** Attempts with their response status and the first KiB of the body the receiver answered. */
export function AttemptsTable({
  attempts,
  caption,
  onResend,
  resendDisabled,
}: {
  attempts: readonly WebhookAttempt[];
  caption: string;
  onResend?: (a: WebhookAttempt) => void;
  resendDisabled?: boolean;
}) {
  const resend: Column<WebhookAttempt>[] = onResend
    ? [
        {
          header: "Resend",
          cell: (a) => (
            <button type="button" disabled={resendDisabled} onClick={() => onResend(a)} aria-label={`Resend ${a.event} to ${a.webhook_endpoint}`}>
              Resend
            </button>
          ),
        },
      ]
    : [];
  return <DataTable caption={caption} columns={[...ATTEMPT_COLUMNS, ...resend]} rows={attempts} />;
}
