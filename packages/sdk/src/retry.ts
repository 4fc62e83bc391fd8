/** When a failed attempt is tried again, and after how long (Stripe's rules, docs/sdk.md "Retries"). */

/** The first retry waits about this long; each next one twice as long, up to MAX_DELAY_MS. */
export const INITIAL_DELAY_MS = 500;
export const MAX_DELAY_MS = 8_000;
/** A `Retry-After` longer than this is not waited for: the error is answered instead. */
export const MAX_RETRY_AFTER_MS = 60_000;

/** Whether an answer with this status may succeed when sent again. */
export function retryableAnswer(status: number, code: string | undefined, headers: Headers): boolean {
  const said = headers.get("stripe-should-retry");
  if (said === "false") return false;
  if (said === "true") return true;
  if (status === 409) return code === "idempotency_key_in_use";
  return status === 429 || status >= 500;
}

/** Network failures that a retry cannot fix: the server's certificate is not trusted. */
const CERTIFICATE_CODES = new Set([
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_HAS_EXPIRED",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

export function retryableFailure(cause: unknown): boolean {
  const code = (cause as { code?: unknown; cause?: { code?: unknown } } | null)?.code ?? (cause as { cause?: { code?: unknown } } | null)?.cause?.code;
  return !(typeof code === "string" && CERTIFICATE_CODES.has(code));
}

/** `Retry-After` in milliseconds (seconds, or an HTTP date), or undefined when absent or unreadable. */
export function retryAfterMs(headers: Headers, now = Date.now()): number | undefined {
  const value = headers.get("retry-after");
  if (value === null) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * How long to wait before retry number `retry` (1 for the first): exponential backoff with jitter (between half and
 * all of 500 ms x 2^(retry-1), at most 8 s), never sooner than `Retry-After`; undefined when `Retry-After` asks for
 * longer than a minute (the caller answers the error rather than hold the call that long).
 */
export function retryDelayMs(retry: number, retryAfter: number | undefined, random: () => number = Math.random): number | undefined {
  if (retryAfter !== undefined && retryAfter > MAX_RETRY_AFTER_MS) return undefined;
  const backoff = Math.min(MAX_DELAY_MS, INITIAL_DELAY_MS * 2 ** (retry - 1));
  const jittered = backoff * (0.5 + random() / 2);
  return Math.max(jittered, retryAfter ?? 0);
}

/** Waits `ms`, or rejects when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", abort, { once: true });
  });
}
