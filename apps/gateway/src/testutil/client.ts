import { Agent, request, type Dispatcher } from "undici";

export interface ApiResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | undefined>>;
  /** The body exactly as received. */
  readonly text: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies; each assertion states the shape it expects.
  readonly json: any;
}

export interface SendOptions {
  /** Sent as `Authorization: Bearer <key>`. */
  readonly key?: string;
  /** Body as JSON. */
  readonly json?: unknown;
  /** Body as application/x-www-form-urlencoded with bracket notation (an object), or a raw form string. */
  readonly form?: Record<string, unknown> | string;
  /** A raw body; set its content type in `headers`. */
  readonly body?: string | Buffer;
  readonly headers?: Readonly<Record<string, string>>;
}

/** Stripe bracket notation: `{metadata: {a: "1"}}` -> `metadata[a]=1`. */
export function toForm(params: Record<string, unknown>, prefix = ""): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(params)) {
    const name = prefix ? `${prefix}[${key}]` : key;
    if (value === undefined) continue;
    if (Array.isArray(value)) {
      for (const item of value) parts.push(`${encodeURIComponent(`${name}[]`)}=${encodeURIComponent(String(item))}`);
    } else if (value !== null && typeof value === "object") {
      const nested = toForm(value as Record<string, unknown>, name);
      if (nested) parts.push(nested);
    } else {
      parts.push(`${encodeURIComponent(name)}=${encodeURIComponent(String(value))}`);
    }
  }
  return parts.join("&");
}

/**
 * A real HTTP(S) client for tests. For HTTPS it trusts exactly the given
 * certificate (the gateway's development one), nothing is switched off.
 */
export function apiClient(origin: string, options: { ca?: string } = {}) {
  const dispatcher: Dispatcher = new Agent({ connect: options.ca ? { ca: options.ca } : {}, keepAliveTimeout: 1_000 });

  async function send(method: string, path: string, opts: SendOptions = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.key !== undefined) headers["authorization"] = `Bearer ${opts.key}`;
    let body: string | Buffer | undefined = opts.body;
    if (opts.json !== undefined) {
      body = JSON.stringify(opts.json);
      headers["content-type"] ??= "application/json";
    } else if (opts.form !== undefined) {
      body = typeof opts.form === "string" ? opts.form : toForm(opts.form);
      headers["content-type"] ??= "application/x-www-form-urlencoded";
    }
    const response = await request(`${origin}${path}`, { method: method as Dispatcher.HttpMethod, headers, body: body ?? null, dispatcher });
    const text = await response.body.text();
    const flat: Record<string, string | undefined> = {};
    for (const [name, value] of Object.entries(response.headers)) flat[name] = Array.isArray(value) ? value.join(", ") : value;
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: response.statusCode, headers: flat, text, json };
  }

  return {
    send,
    get: (path: string, opts?: SendOptions) => send("GET", path, opts),
    post: (path: string, opts?: SendOptions) => send("POST", path, opts),
    delete: (path: string, opts?: SendOptions) => send("DELETE", path, opts),
    close: () => dispatcher.close(),
  };
}

export type ApiClient = ReturnType<typeof apiClient>;
