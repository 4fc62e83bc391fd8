import { connectionError, errorOfAnswer, RMSError } from "./errors.js";
import type { RequestOptions, SettledOptions } from "./options.js";
import { queryString } from "./query.js";
import { responseInfo, type ResponseInfo, type RMSResponse, withLastResponse } from "./response.js";
import { retryableAnswer, retryableFailure, retryAfterMs, retryDelayMs, sleep } from "./retry.js";
import type { RequestBody, Transport, TransportResponse } from "./transport.js";

/** One call of the API as a method asks for it; the sender owns keys, idempotency, timeouts, retries and errors. */
export interface Call {
  readonly method: "GET" | "POST" | "DELETE";
  /** The path, parameters filled in (`/v1/resources/res_...`). */
  readonly path: string;
  /** Query parameters (bracket notation). */
  readonly query?: object | undefined;
  /** A JSON body. */
  readonly json?: unknown;
  /** A raw body, made anew for every attempt (a body read once cannot be sent twice: its factory throws). */
  readonly body?: (() => RequestBody) | undefined;
  readonly headers?: Readonly<Record<string, string>>;
  readonly options?: RequestOptions | undefined;
  /** Bytes of the body sent so far by the current attempt, where the transport counts them. */
  readonly onBodyProgress?: ((sent: number) => void) | undefined;
}

/** A successful answer whose body is still to be read (a file's contents). */
export interface OpenedAnswer extends TransportResponse {
  readonly info: ResponseInfo;
}

export interface SenderConfig {
  readonly apiKey: string;
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly maxNetworkRetries: number;
  readonly transport: Transport;
  readonly userAgent?: string | undefined;
}

/** A random `Idempotency-Key` for a call that has none: the same on every retry of that call. */
export function newIdempotencyKey(): string {
  const uuid =
    typeof crypto.randomUUID === "function"
      ? crypto.randomUUID()
      : Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
  return `sdk-${uuid}`;
}

async function readText(body: ReadableStream<Uint8Array> | null): Promise<string> {
  if (body === null) return "";
  const decoder = new TextDecoder();
  let text = "";
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    text += decoder.decode(value, { stream: true });
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

class AttemptTimeout extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
    this.name = "AttemptTimeout";
  }
}

/** What one attempt ended with: an answer (its body read, or left to read), or no answer at all. */
type Attempt = { answer: TransportResponse; text: string | undefined } | { failure: unknown };

/** Sends calls of the API: the one place that knows keys, idempotency keys, timeouts, retries and errors. */
export class RequestSender {
  constructor(private readonly config: SenderConfig) {}

  settle(options: RequestOptions | undefined): SettledOptions {
    return {
      apiKey: options?.apiKey ?? this.config.apiKey,
      timeoutMs: options?.timeoutMs ?? this.config.timeoutMs,
      maxNetworkRetries: options?.maxNetworkRetries ?? this.config.maxNetworkRetries,
      idempotencyKey: options?.idempotencyKey,
      signal: options?.signal,
    };
  }

  /** A call answered with JSON: the object, with its `lastResponse`. */
  async json<T extends object>(call: Call): Promise<RMSResponse<T>> {
    const { answer, text } = await this.exchange(call, true);
    const parsed = parseJson(text ?? "");
    if (parsed === null || typeof parsed !== "object") {
      throw new RMSError({ type: "api_error", message: "The API answered with something that is not a JSON object.", statusCode: answer.status, headers: {} });
    }
    return withLastResponse(parsed as T, responseInfo(answer.status, answer.headers));
  }

  /** A call whose successful answer's body is read by the caller (a file's contents); errors are thrown as for JSON. */
  async open(call: Call): Promise<OpenedAnswer> {
    const { answer } = await this.exchange(call, false);
    return { ...answer, info: responseInfo(answer.status, answer.headers) };
  }

  private async exchange(call: Call, readSuccess: boolean): Promise<{ answer: TransportResponse; text: string | undefined }> {
    const settled = this.settle(call.options);
    // A POST or DELETE carries a key, made here when the caller gave none, so a retry after a lost answer is a replay.
    const idempotencyKey = call.method === "GET" ? undefined : (settled.idempotencyKey ?? newIdempotencyKey());
    for (let attempt = 1; ; attempt++) {
      const result = await this.attempt(call, settled, idempotencyKey, readSuccess);
      const retriesLeft = attempt <= settled.maxNetworkRetries;
      if ("failure" in result) {
        if (settled.signal?.aborted) throw settled.signal.reason;
        if (retriesLeft && retryableFailure(result.failure)) {
          await sleep(retryDelayMs(attempt, undefined)!, settled.signal);
          continue;
        }
        throw connectionError(result.failure, attempt);
      }
      const { answer, text } = result;
      if (answer.status < 300) return result;
      const error = errorOfAnswer(answer.status, answer.headers, parseJson(text ?? ""));
      if (retriesLeft && retryableAnswer(answer.status, error.code, answer.headers)) {
        const delay = retryDelayMs(attempt, retryAfterMs(answer.headers));
        if (delay !== undefined) {
          await sleep(delay, settled.signal);
          continue;
        }
      }
      throw error;
    }
  }

  private async attempt(call: Call, settled: SettledOptions, idempotencyKey: string | undefined, readSuccess: boolean): Promise<Attempt> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new AttemptTimeout(settled.timeoutMs)), settled.timeoutMs);
    const onAbort = () => controller.abort(settled.signal!.reason);
    settled.signal?.addEventListener("abort", onAbort, { once: true });
    const headers: Record<string, string> = {
      Authorization: `Bearer ${settled.apiKey}`,
      ...(this.config.userAgent ? { "User-Agent": this.config.userAgent } : {}),
      ...(idempotencyKey ? { "Idempotency-Key": idempotencyKey } : {}),
      ...call.headers,
    };
    let body: RequestBody | undefined;
    try {
      if (call.json !== undefined) {
        headers["Content-Type"] = "application/json";
        body = JSON.stringify(call.json);
      } else if (call.body) body = call.body();
    } catch (cause) {
      clearTimeout(timer);
      return { failure: cause };
    }
    try {
      const answer = await this.config.transport({
        method: call.method,
        url: `${this.config.baseUrl}${call.path}${queryString(call.query)}`,
        headers,
        ...(body !== undefined ? { body } : {}),
        signal: controller.signal,
        ...(call.onBodyProgress ? { onBodyProgress: call.onBodyProgress } : {}),
      });
      if (answer.status < 300 && !readSuccess) return { answer, text: undefined };
      return { answer, text: await readText(answer.body) };
    } catch (cause) {
      const reason = controller.signal.aborted ? controller.signal.reason : cause;
      return { failure: reason instanceof AttemptTimeout || !(reason instanceof Error) ? reason : cause };
    } finally {
      clearTimeout(timer);
      // A body left to the caller stays tied to the caller's signal; otherwise the call is over.
      if (readSuccess) settled.signal?.removeEventListener("abort", onAbort);
    }
  }
}
