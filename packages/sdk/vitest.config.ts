import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    // The tarball test packs the SDK, installs it and starts the whole stack once.
    testTimeout: 120_000,
    hookTimeout: 300_000,
  },
});
