import type { AnyService } from "@rms/proto";
import { isRetried } from "./services.js";

/** How a call is retried: how many attempts in all (grpc-js allows at most 5) and the backoff between them. */
export interface RetryPolicy {
  /** Attempts of one call, the first included; 1 turns retries off. */
  readonly maxAttempts: number;
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 4, initialBackoffMs: 100, maxBackoffMs: 2_000 };

const seconds = (ms: number) => `${(ms / 1000).toFixed(3).replace(/\.?0+$/, "")}s`;

/**
 * The channel's service config (gRPC's retry design, which grpc-js follows): the retried methods of `services`
 * (services.ts `isRetried`) are repeated on UNAVAILABLE (core restarting, a connection lost, or core answering that
 * its database is unreachable), with jittered exponential backoff. A read repeats harmlessly, and the client sends
 * each write it retries under an idempotency key, the same on every attempt, so core answers a repeat with the first
 * outcome. Streams are not retried (an upload is not kept whole to send again), nor the operator's account and key
 * writes, which core keeps no key for.
 */
export function retryServiceConfig(services: readonly AnyService[], policy: RetryPolicy): string {
  const name = services.flatMap((service) => service.methods.filter(isRetried).map((m) => ({ service: service.typeName, method: m.name })));
  if (policy.maxAttempts <= 1) return JSON.stringify({ methodConfig: [] });
  return JSON.stringify({
    methodConfig: [
      {
        name,
        retryPolicy: {
          maxAttempts: Math.min(policy.maxAttempts, 5),
          initialBackoff: seconds(policy.initialBackoffMs),
          maxBackoff: seconds(policy.maxBackoffMs),
          backoffMultiplier: 2,
          retryableStatusCodes: ["UNAVAILABLE"],
        },
      },
    ],
  });
}
