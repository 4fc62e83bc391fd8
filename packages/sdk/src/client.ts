import { handWritten, type HandWrittenNamespaces } from "./custom.js";
import { type GeneratedNamespaces, OPERATIONS } from "./gen/operations.js";
import { SDK_VERSION } from "./gen/version.js";
import { namespacesOf } from "./namespaces.js";
import { type ClientOptions, DEFAULT_BASE_URL, DEFAULT_MAX_NETWORK_RETRIES, DEFAULT_TIMEOUT_MS, type RequestOptions } from "./options.js";
import { platform } from "./platform.js";
import { RequestSender } from "./request.js";
import type { RMSResponse } from "./response.js";
import { Webhooks } from "./webhooks.js";

type Merged<G, H> = {
  readonly [N in keyof G | keyof H]: (N extends keyof G ? G[N] : unknown) & (N extends keyof H ? H[N] : unknown);
};

/** Every namespace of the client: the generated methods and the hand-written ones, side by side. */
export type Namespaces = Merged<GeneratedNamespaces, HandWrittenNamespaces>;

// The namespaces are made from the generated table at construction; this interface gives them their types.
export interface RMS extends Namespaces {}

/**
 * The API's client: `new RMS(apiKey, { baseUrl, ca, maxNetworkRetries, timeoutMs, fetch })`, one namespace per kind
 * of object with Stripe's method names (`rms.resources.create`, `rms.webhookEndpoints.rotateSecret`), per-call
 * options as every method's last argument.
 */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the constructor assigns every namespace the interface declares.
export class RMS {
  /** Webhook verification (`RMS.Webhooks.verify`), also exported on its own. */
  static readonly Webhooks = Webhooks;
  /** The same, on the client (`rms.webhooks.verify`). */
  readonly webhooks = Webhooks;
  /** This SDK's version. */
  static readonly VERSION = SDK_VERSION;
  readonly #sender: RequestSender;

  constructor(apiKey: string, options: ClientOptions = {}) {
    if (typeof apiKey !== "string" || apiKey === "") throw new TypeError("new RMS(apiKey): an API key (sk_..., rk_... or pk_...) is required");
    const here = platform();
    this.#sender = new RequestSender({
      apiKey,
      baseUrl: (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, ""),
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      maxNetworkRetries: options.maxNetworkRetries ?? DEFAULT_MAX_NETWORK_RETRIES,
      transport: here.transport({ ca: options.ca, fetch: options.fetch }),
      userAgent: here.userAgent,
    });
    const generated = namespacesOf(OPERATIONS, this.#sender);
    const written = handWritten(this.#sender) as unknown as Record<string, object>;
    for (const name of new Set([...Object.keys(generated), ...Object.keys(written)])) {
      Object.defineProperty(this, name, { value: Object.freeze({ ...generated[name], ...written[name] }), enumerable: true });
    }
  }

  /**
   * Any call of the API by its verb and path, for what the SDK has no method for: parameters as the query of a GET or
   * DELETE, the JSON body of a POST; the same retries, idempotency keys and errors as every method.
   */
  rawRequest<T extends object = Record<string, unknown>>(
    method: "GET" | "POST" | "DELETE",
    path: string,
    params?: object,
    options?: RequestOptions,
  ): Promise<RMSResponse<T>> {
    return this.#sender.json<T>({ method, path, ...(method === "POST" ? { json: params ?? {} } : { query: params }), options });
  }
}
