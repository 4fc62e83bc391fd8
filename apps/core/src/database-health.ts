import { DATABASE_HEALTH_SERVICE, DATABASE_SLOW_MS } from "@rms/proto";
import type { HealthImplementation } from "grpc-health-check";
import type { Db } from "mongodb";
import type { Logger } from "pino";

/** A ping without an answer within this is the database unreachable (it fails sooner when no server can be selected: 2 s). */
export const DATABASE_PING_TIMEOUT_MS = 3_000;

type DatabaseState = "fast" | "slow" | "down";

/**
 * Health follows the database, pinged every `intervalMs` (one ping at a time): every name in `names` (`""` and
 * each service) is NOT_SERVING while it does not answer (down), and DATABASE_HEALTH_SERVICE is SERVING only while
 * it answers within DATABASE_SLOW_MS (slow: the service works, slowly; `GET /v1/status` says `degraded`). The
 * library tells every Health/Watch stream of each setStatus, so it is told only of changes. Returns the stop.
 */
export function watchDatabaseHealth(db: Db, health: HealthImplementation, names: readonly string[], intervalMs: number, logger: Logger): () => void {
  let state: DatabaseState = "fast";
  let checking = false;
  health.setStatus(DATABASE_HEALTH_SERVICE, "SERVING");
  const check = async () => {
    if (checking) return;
    checking = true;
    const started = performance.now();
    const next: DatabaseState = await db.command({ ping: 1 }, { timeoutMS: DATABASE_PING_TIMEOUT_MS }).then(
      () => (performance.now() - started >= DATABASE_SLOW_MS ? "slow" : "fast"),
      () => "down",
    );
    checking = false;
    if (next === state) return;
    const pingMs = Math.round(performance.now() - started);
    if (next === "fast") logger.info({ ping_ms: pingMs }, "database answers again within the health threshold");
    else
      logger.warn(
        { ping_ms: pingMs, slow_ms: DATABASE_SLOW_MS, state: next },
        next === "slow" ? "database answers slowly: health degraded" : "database unreachable: not serving",
      );
    state = next;
    for (const name of names) health.setStatus(name, next === "down" ? "NOT_SERVING" : "SERVING");
    health.setStatus(DATABASE_HEALTH_SERVICE, next === "fast" ? "SERVING" : "NOT_SERVING");
  };
  const timer = setInterval(() => void check(), intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
