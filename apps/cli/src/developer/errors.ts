import { RMSConnectionError, type RMSError } from "@rms/sdk";

/** Failures of TLS that a certificate to trust (`--ca`) mends. */
const UNTRUSTED = /self[- ]signed|unable to verify|issuer certificate|UNABLE_TO_GET_ISSUER|DEPTH_ZERO|SELF_SIGNED/i;

/** One line for an error of the API (or of reaching it): its message, status and code, and the request id to quote. */
export function describeApiError(error: RMSError): string {
  if (error instanceof RMSConnectionError) {
    const cause = error.cause instanceof Error ? `${error.cause.message} ${(error.cause as NodeJS.ErrnoException).code ?? ""}` : "";
    const hint = UNTRUSTED.test(`${error.message} ${cause}`) ? " (the API's certificate is not trusted: give it with --ca or RMS_CA)" : "";
    return `${error.message}${hint}`;
  }
  const what = [error.statusCode, error.code ?? error.type].filter((part) => part !== undefined).join(" ");
  return `${error.message} [${what}]${error.param ? ` (${error.param})` : ""}${error.requestId ? ` (request ${error.requestId})` : ""}`;
}
