import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // buf generate runs a subprocess; under a loaded CI machine it can take several seconds.
    testTimeout: 60_000,
  },
});
