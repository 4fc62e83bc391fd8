import type { CoreClients } from "../core.js";
import { requestFingerprint } from "./fingerprint.js";
import type { IdempotencyLease, IdempotencyScope, IdempotencyStore, RecordedResponse } from "./store.js";

/** Thrown out of the first core call when the key already has a recorded response. */
export class IdempotentReplay extends Error {
  constructor(readonly response: RecordedResponse) {
    super("idempotent replay");
    this.name = "IdempotentReplay";
  }
}

/**
 * One POST with an Idempotency-Key. Execution begins at the operation's first
 * call to core: that is where the lock is taken (and the fingerprint made from
 * what is sent), so everything refused before it (auth, rate limit, gateway-side
 * validation) saves nothing.
 */
export class IdempotentRequest {
  private lease: IdempotencyLease | undefined;
  private beginning: Promise<void> | undefined;

  constructor(
    private readonly store: IdempotencyStore,
    private readonly scope: IdempotencyScope,
    private readonly http: { readonly method: string; readonly path: string; readonly requestId: string },
    /** Runs before a recorded response is replayed (which reaches no core call); throws to refuse. */
    private readonly beforeReplay?: () => Promise<unknown>,
  ) {}

  /** True once the lock is held: from then on the outcome is recorded (or the lock released). */
  get began(): boolean {
    return this.lease !== undefined;
  }

  /** Core clients whose first call takes the lock (or throws IdempotentReplay / an ApiError). */
  guard(core: CoreClients): CoreClients {
    const clients = new Map<PropertyKey, unknown>();
    return new Proxy(core, {
      get: (target, property, receiver) => {
        const value: unknown = Reflect.get(target, property, receiver);
        if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
        if (!clients.has(property)) clients.set(property, this.guardClient(value as Record<PropertyKey, unknown>));
        return clients.get(property);
      },
    });
  }

  private guardClient(client: Record<PropertyKey, unknown>): unknown {
    return new Proxy(client, {
      get: (target, property, receiver) => {
        const method: unknown = Reflect.get(target, property, receiver);
        if (typeof method !== "function") return method;
        return async (request: unknown, ...rest: unknown[]) => {
          await this.begin(String(property), request);
          return (method as (...args: unknown[]) => unknown).call(target, request, ...rest);
        };
      },
    });
  }

  private begin(rpc: string, request: unknown): Promise<void> {
    this.beginning ??= (async () => {
      const fingerprint = requestFingerprint(this.http.method, this.http.path, rpc, request);
      const result = await this.store.begin(this.scope, fingerprint, this.http.requestId);
      if (result.kind === "replay") {
        await this.beforeReplay?.();
        throw new IdempotentReplay(result.response);
      }
      this.lease = result.lease;
    })();
    return this.beginning;
  }

  /** Records the response of an executed request (best effort: the lock expires if this fails). */
  async complete(status: number, body: Buffer): Promise<void> {
    await this.lease?.complete({ status, body, requestId: this.http.requestId });
  }

  /** Ends the lock without recording (e.g. a 5xx: the outcome is unknown, a retry executes again). */
  async release(): Promise<void> {
    await this.lease?.release();
  }
}
