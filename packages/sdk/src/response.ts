/** What an answer came with: its status, request id and headers (lower-case names). */
export interface ResponseInfo {
  readonly statusCode: number;
  readonly requestId: string | undefined;
  readonly headers: Readonly<Record<string, string>>;
}

/** An answer of the API, with the response it came in as a non-enumerable `lastResponse` (not in its JSON). */
export type RMSResponse<T> = T & { readonly lastResponse: ResponseInfo };

/** The headers of a response as a plain object, names in lower case. */
export function headersOf(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    out[name.toLowerCase()] = value;
  });
  return out;
}

export function responseInfo(status: number, headers: Headers): ResponseInfo {
  return { statusCode: status, requestId: headers.get("request-id") ?? undefined, headers: headersOf(headers) };
}

/** `value` with `lastResponse` attached, not enumerable: `JSON.stringify` and spreading see only the API's fields. */
export function withLastResponse<T extends object>(value: T, info: ResponseInfo): RMSResponse<T> {
  Object.defineProperty(value, "lastResponse", { value: info, enumerable: false, configurable: true });
  return value as RMSResponse<T>;
}
