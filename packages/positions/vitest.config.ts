import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // One database server for this package's run; each test file uses a database of its own.
    globalSetup: ["@rms/test-db/vitest-setup"],
    testTimeout: 30_000,
    hookTimeout: 300_000,
  },
});
