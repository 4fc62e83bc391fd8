import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.{ts,tsx}", "e2e/**/*.e2e.test.ts"],
    // The browser tests start the whole stack once (an embedded MongoDB, core, a worker, the gateway), and a test waits
    // for several things in turn, each as long as Playwright's 30 s: the test's own bound leaves room for a few of them.
    testTimeout: 120_000,
    hookTimeout: 240_000,
    // expect.poll waits as long as Playwright's own waits (vitest's 1 s is one slow answer on a busy machine).
    expect: { poll: { timeout: 30_000 } },
  },
});
