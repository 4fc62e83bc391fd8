/**
 * A request log as a curl command to run it again: the method, the URL on this origin, the key masked (the log
 * holds its id only, and a command to paste must not carry one), the Idempotency-Key, and the parameters (a GET's as
 * the query string in the API's bracket form, a POST's as a JSON body).
 */
export interface LoggedRequest {
  readonly method: string;
  readonly path: string;
  readonly key_kind: string;
  readonly livemode: boolean;
  readonly idempotency_key: string | null;
  readonly request_params: unknown;
}

/** Shell-quoted: one word, whatever it holds. */
export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, "'\\''")}'`;
}

/** A key of this kind and mode, masked: what a command shows in its place. */
export function maskedKey(kind: string, livemode: boolean): string {
  const prefix = kind === "publishable" ? "pk" : kind === "restricted" ? "rk" : "sk";
  return `${prefix}_${livemode ? "live" : "test"}_********`;
}

/** Parameters as a query string in bracket form (`created[gte]=1`, `ids[]=a`), as the API reads them. */
export function queryOf(params: unknown): string {
  const out = new URLSearchParams();
  const add = (name: string, value: unknown) => {
    if (value === null || value === undefined) return;
    if (Array.isArray(value)) for (const item of value) add(`${name}[]`, item);
    else if (typeof value === "object") for (const [k, v] of Object.entries(value as Record<string, unknown>)) add(`${name}[${k}]`, v);
    else out.append(name, String(value));
  };
  if (params && typeof params === "object") for (const [k, v] of Object.entries(params as Record<string, unknown>)) add(k, v);
  return out.toString();
}

export function curlOf(log: LoggedRequest, origin: string): string {
  const params = log.request_params && typeof log.request_params === "object" && Object.keys(log.request_params).length > 0 ? log.request_params : null;
  const query = log.method === "GET" && params ? `?${queryOf(params)}` : "";
  const lines = [
    `curl -X ${log.method} ${shellQuote(`${origin}${log.path}${query}`)}`,
    `-H ${shellQuote(`Authorization: Bearer ${maskedKey(log.key_kind, log.livemode)}`)}`,
  ];
  if (log.idempotency_key) lines.push(`-H ${shellQuote(`Idempotency-Key: ${log.idempotency_key}`)}`);
  if (log.method !== "GET" && params) lines.push(`-H 'Content-Type: application/json'`, `-d ${shellQuote(JSON.stringify(params))}`);
  return lines.join(" \\\n  ");
}
