import { describe, expect, it } from "vitest";
import { runCli } from "../cli.js";

/** `rms <args>` in this process with `env`: its exit code and output. */
async function rms(env: Record<string, string>, ...args: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(args, { env, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

describe("the developer commands' arguments", () => {
  it("need a key, from --api-key or RMS_API_KEY, and say how to get one", async () => {
    for (const args of [["listen"], ["trigger", "resource.created"], ["logs", "tail"]]) {
      const run = await rms({}, ...args);
      expect(run.code, args.join(" ")).toBe(2);
      expect(run.stderr).toMatch(/an API key is needed: --api-key sk_test_\.\.\. or RMS_API_KEY/);
    }
  });

  it("refuse a base that is not https (a key sent over plain HTTP is revoked), from the flag or RMS_API_BASE", async () => {
    const flag = await rms({ RMS_API_KEY: "sk_test_x" }, "logs", "tail", "--api-base", "http://localhost:8443");
    expect(flag.code).toBe(2);
    expect(flag.stderr).toMatch(/must be https:\/\//);
    const env = await rms({ RMS_API_KEY: "sk_test_x", RMS_API_BASE: "http://localhost:8443" }, "listen");
    expect(env.code).toBe(2);
    expect(env.stderr).toMatch(/RMS_API_BASE must be https:\/\//);
  });

  it("trigger: only the event types it can make, and never with a live key", async () => {
    const unknown = await rms({ RMS_API_KEY: "sk_test_x" }, "trigger", "resource.exploded");
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(
      /Allowed choices are resource\.created, resource\.updated, resource\.deleted, job\.succeeded, job\.failed, job\.canceled, webhook_endpoint\.disabled/,
    );
    for (const key of [`sk_live_${"a".repeat(32)}`, `rk_live_${"a".repeat(32)}`, "not-a-key"]) {
      const live = await rms({ RMS_API_KEY: key, RMS_API_BASE: "https://127.0.0.1:1" }, "trigger", "resource.created");
      expect(live.code, key).toBe(2);
      expect(live.stderr).toMatch(/test-mode key only/);
    }
  });

  it("listen: --forward-to is an http(s) URL and --since an event id", async () => {
    expect((await rms({ RMS_API_KEY: "sk_test_x" }, "listen", "--forward-to", "ftp://x")).stderr).toMatch(/http:\/\/ or https:\/\//);
    expect((await rms({ RMS_API_KEY: "sk_test_x" }, "listen", "--since", "res_1")).stderr).toMatch(/must be an event id/);
  });

  it("a certificate that cannot be read is said plainly", async () => {
    const run = await rms({ RMS_API_KEY: "sk_test_x" }, "logs", "tail", "--ca", "/nonexistent/cert.pem");
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/cannot read the certificate \/nonexistent\/cert\.pem/);
  });
});
