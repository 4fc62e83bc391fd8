import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    globalSetup: ["./src/vitest-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 300_000,
  },
});
