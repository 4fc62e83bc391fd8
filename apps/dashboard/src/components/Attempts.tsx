import type { WebhookAttempt } from "../api/client";
import { formatTime } from "../lib/time";
import { IdLink } from "./IdLink";
import { StatusBadge } from "./ui";

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
  return (
    <table className="table">
      <caption className="sr-only">{caption}</caption>
      <thead>
        <tr>
          <th scope="col">Attempt</th>
          <th scope="col">Event</th>
          <th scope="col">Endpoint</th>
          <th scope="col">Status</th>
          <th scope="col">Response</th>
          <th scope="col">Trigger</th>
          <th scope="col">When</th>
          {onResend && <th scope="col">Resend</th>}
        </tr>
      </thead>
      <tbody>
        {attempts.map((a) => (
          <tr key={a.id}>
            <td>
              <code>{a.id}</code>
            </td>
            <td>
              <IdLink id={a.event} />
            </td>
            <td>
              <IdLink id={a.webhook_endpoint} />
            </td>
            <td>
              <StatusBadge status={a.status} />
              {a.failure_code && <span className="help"> {a.failure_code}</span>}
            </td>
            <td>
              <span>{a.response_status ?? "no response"}</span> <span className="help">{a.duration_ms} ms</span>
              {a.response_body !== null && a.response_body !== "" && (
                <details>
                  <summary>Body</summary>
                  <pre className="json">{a.response_body}</pre>
                </details>
              )}
            </td>
            <td>{a.trigger}</td>
            <td className="when">{formatTime(a.created)}</td>
            {onResend && (
              <td>
                <button type="button" disabled={resendDisabled} onClick={() => onResend(a)} aria-label={`Resend ${a.event} to ${a.webhook_endpoint}`}>
                  Resend
                </button>
              </td>
            )}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
