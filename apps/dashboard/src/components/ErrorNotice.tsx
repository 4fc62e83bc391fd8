import { ApiFailure } from "../api/client";

/** An API error as every page shows it: the API's message, its code, and the request id to quote to support. */
export function ErrorNotice({ error, title }: { error: unknown; title?: string }) {
  if (!error) return null;
  const failure = error instanceof ApiFailure ? error : null;
  const message = error instanceof Error ? error.message : String(error);
  return (
    <div className="notice notice-error" role="alert">
      <p className="notice-title">{title ?? "The API refused this"}</p>
      <p>{message}</p>
      {failure && (
        <p className="notice-meta">
          {failure.status > 0 && <span>HTTP {failure.status}</span>}
          {failure.code && (
            <span>
              code <code>{failure.code}</code>
            </span>
          )}
          {failure.param && (
            <span>
              parameter <code>{failure.param}</code>
            </span>
          )}
          <span>
            request id <code data-testid="request-id">{failure.requestId ?? "none (no answer)"}</code>
          </span>
        </p>
      )}
    </div>
  );
}

/** A page whose API this server does not have (404 `route_missing`): said plainly, not as a failure. */
export function NotAvailable({ what, error }: { what: string; error: ApiFailure }) {
  return (
    <div className="notice notice-info" role="status">
      <p className="notice-title">{what} are not available on this server</p>
      <p>
        The API answered <code>404 route_missing</code>: this gateway does not have the {what.toLowerCase()} API yet. The page works as soon as it does.
      </p>
      <p className="notice-meta">
        <span>
          request id <code>{error.requestId ?? "none"}</code>
        </span>
      </p>
    </div>
  );
}
