import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.{ts,tsx}", "e2e/**/*.e2e.test.ts"],
    // The browser tests start the whole stack once (an embedded MongoDB, core, a worker, the gateway).
    testTimeout: 60_000,
    hookTimeout: 240_000,
  },
});
