import type { Db } from "mongodb";

/**
 * Makes the server's TTL monitor pass every second instead of every 60 s (the test server is test-only),
 * so a test sees an expired document go within seconds. A pass already sleeping finishes its old sleep
 * first: waits for expiry use TTL_WAIT_MS.
 */
export async function fastTtlMonitor(db: Db): Promise<void> {
  await db.admin().command({ setParameter: 1, ttlMonitorSleepSecs: 1 });
}

/** How long a test waits for the TTL monitor to remove an expired document: a full default sleep (60 s) and then some. */
export const TTL_WAIT_MS = 90_000;

/** Per-test time limit of a test that waits for the TTL monitor. */
export const TTL_TEST_TIMEOUT_MS = 2 * TTL_WAIT_MS;
