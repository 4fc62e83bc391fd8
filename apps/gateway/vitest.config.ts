import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // One database server for the run; each end-to-end test file uses its own database on it.
    globalSetup: ["@rms/test-db/vitest-setup"],
    include: ["src/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
  },
});
