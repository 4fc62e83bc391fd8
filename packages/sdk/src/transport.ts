/** A request body: text, bytes, a Blob (a file's bytes stay on disk), or a stream read once. */
export type RequestBody = string | Uint8Array | Blob | ReadableStream<Uint8Array>;

/** One HTTP exchange as the request sender asks for it. */
export interface TransportRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: RequestBody;
  /** Aborts the exchange (a timeout, or the caller's signal). */
  readonly signal: AbortSignal;
  /** Told how many bytes of the body have been sent so far, where the transport can count them (Node). */
  readonly onBodyProgress?: (sent: number) => void;
}

export interface TransportResponse {
  readonly status: number;
  readonly headers: Headers;
  /** The body as it arrives; an error while reading it means the connection was cut. */
  readonly body: ReadableStream<Uint8Array> | null;
}

/** Sends one request and answers once the response's headers are in. */
export type Transport = (request: TransportRequest) => Promise<TransportResponse>;

/** A transport over a `fetch` (browsers; Node when the caller gives one). */
export function fetchTransport(fetchFn: typeof fetch): Transport {
  return async (request) => {
    const init: RequestInit & { duplex?: "half" } = { method: request.method, headers: request.headers, signal: request.signal };
    if (request.body !== undefined) {
      init.body = request.body as BodyInit;
      // A stream body is sent as it is read (fetch requires saying so).
      if (typeof ReadableStream !== "undefined" && request.body instanceof ReadableStream) init.duplex = "half";
    }
    const response = await fetchFn(request.url, init);
    return { status: response.status, headers: response.headers, body: response.body };
  };
}
