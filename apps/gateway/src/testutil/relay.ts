import { startTcpRelay } from "@rms/test-db/testkit";
import { inject } from "vitest";
import type {} from "@rms/test-db/vitest-setup";

/** A TCP relay to this test run's database (see startTcpRelay): cut, restored, or stalling replies. */
export function databaseRelay() {
  return startTcpRelay(inject("mongoUri"));
}
