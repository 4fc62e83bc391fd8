import type { Logger } from "pino";
import type { JobStore } from "./store.js";

/** How often core looks for finished jobs past their 30 days. */
export const RETENTION_INTERVAL_MS = 10 * 60 * 1000;

/**
 * Deletes finished jobs past their retention (and their item errors) in the background: at start and
 * then every 10 minutes, in batches until none is left. A `deleteMany`, never a TTL index (data rule 3).
 */
export function jobRetention(store: JobStore, logger: Logger, intervalMs = RETENTION_INTERVAL_MS) {
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> = Promise.resolve();
  const pass = async () => {
    try {
      while ((await store.deleteExpired()) > 0) {}
    } catch (error) {
      logger.warn({ err: error instanceof Error ? error.message : String(error) }, "job retention pass failed");
    }
  };
  return {
    start() {
      running = pass();
      timer = setInterval(() => {
        running = running.then(pass);
      }, intervalMs);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = null;
      await running;
    },
  };
}
