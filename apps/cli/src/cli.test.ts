import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer, type AddressInfo, type Socket } from "node:net";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { CALL_DEADLINE_MS, runCli } from "./cli.js";
import { ADMIN_TOKEN, useCliCore } from "./testutil/cli-core.js";

const core = useCliCore("cli");
const { rms } = core;

describe("rms accounts and keys", () => {
  it("creates an account and keys of every kind, lists and revokes them, one JSON object per line", async () => {
    const account = (await rms("accounts", "create", "--json")).json()[0];
    expect(account).toMatchObject({ id: expect.stringMatching(/^acct_/), object: "account" });

    const secret = await rms("keys", "create", "--account", account.id, "--kind", "secret", "--mode", "test", "--json");
    expect(secret.code).toBe(0);
    const secretKey = secret.json()[0];
    expect(secretKey).toMatchObject({ id: expect.stringMatching(/^key_/), kind: "secret", livemode: false, secret: expect.stringMatching(/^sk_test_/) });

    const restricted = (
      await rms(
        "keys",
        "create",
        "--account",
        account.id,
        "--kind",
        "restricted",
        "--mode",
        "live",
        "--scopes",
        "resources:read,jobs:write",
        "--expires-at",
        "4102444800",
        "--json",
      )
    ).json()[0];
    expect(restricted).toMatchObject({
      kind: "restricted",
      livemode: true,
      scopes: ["resources:read", "jobs:read", "jobs:write"],
      expires_at: 4102444800,
      secret: expect.stringMatching(/^rk_live_/),
    });

    const publishable = (await rms("keys", "create", "--account", account.id, "--kind", "publishable", "--mode", "live", "--json")).json()[0];
    expect(publishable.secret).toMatch(/^pk_live_/);

    const listed = (await rms("keys", "list", "--account", account.id, "--json")).json();
    expect(listed.map((k: { id: string }) => k.id)).toEqual([publishable.id, restricted.id, secretKey.id]);
    expect(listed.every((k: Record<string, unknown>) => !("secret" in k))).toBe(true);

    const revoked = await rms("keys", "revoke", secretKey.id, "--json");
    expect(revoked.code).toBe(0);
    expect(revoked.json()[0].revoked_at).toEqual(expect.any(Number));
  });

  it.each([
    [["keys", "create", "--account", "acct_0VbmcTa0dnRox8QNLmcF1D", "--kind", "secret", "--mode", "test"], 1, /No such account/],
    [["keys", "create", "--account", "acct_x", "--kind", "master", "--mode", "test"], 2, /kind/],
    [["keys", "create", "--account", "acct_x", "--kind", "secret"], 2, /--mode/],
    [["keys", "revoke", "key_0VbmcTa0dnRox8QNLmcF1D"], 1, /No such key/],
    [["keys", "create", "--account", "acct_x", "--kind", "restricted", "--mode", "test", "--expires-at", "tomorrow"], 2, /Unix timestamp/],
    [
      ["keys", "create", "--account", "acct_x", "--kind", "secret", "--mode", "test", "--expires-at", "1000000000"],
      2,
      /^error: option '--expires-at <unix>' argument '1000000000' is invalid\. must be in the future \(a Unix timestamp in seconds\)\n$/,
    ],
    [["accounts", "list", "--limit", "abc"], 2, /^error: option '--limit <n>' argument 'abc' is invalid\. must be a whole number from 1 to 100\n$/],
    [["accounts", "list", "--limit", "0"], 2, /must be a whole number from 1 to 100/],
    [["accounts", "list", "--limit", "101"], 2, /must be a whole number from 1 to 100/],
    [["accounts", "list", "--limit", "2.5"], 2, /must be a whole number from 1 to 100/],
  ])("fails non-zero with a message on stderr: %j", async (args, code, message) => {
    const result = await rms(...args);
    expect(result.code).toBe(code);
    expect(result.stderr).toMatch(message);
    expect(result.stdout).toBe("");
  });
});

describe("rms itself", () => {
  it("prints its version", async () => {
    const result = await rms("--version");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  });

  it("names the environment it reads in its help", async () => {
    const result = await rms("--help");
    expect(result.code).toBe(0);
    for (const variable of ["RMS_ADMIN_TOKEN", "CORE_ADDR", "RMS_DATA_DIR", "RMS_API_KEY", "RMS_API_BASE", "RMS_CA"]) expect(result.stdout).toContain(variable);
  });

  it("lists accounts with a valid --limit", async () => {
    await rms("accounts", "create");
    await rms("accounts", "create");
    const result = await rms("accounts", "list", "--limit", "2", "--json");
    expect(result.code).toBe(0);
    expect(result.json()).toHaveLength(2);
  });
});

describe("the rms binary", () => {
  const run = promisify(execFile);
  const bin = new URL("../bin/rms.js", import.meta.url).pathname;

  it("works end to end as a process", async () => {
    const { stdout } = await run(process.execPath, [bin, "accounts", "create", "--json"], {
      env: { ...process.env, RMS_ADMIN_TOKEN: ADMIN_TOKEN, CORE_ADDR: core.address },
    });
    expect(JSON.parse(stdout)).toMatchObject({ object: "account" });
  });

  it("refuses a bad CORE_ADDR or a short RMS_ADMIN_TOKEN with one line naming it, by the rules core and gateway use", async () => {
    for (const [env, line] of [
      [{ RMS_ADMIN_TOKEN: ADMIN_TOKEN, CORE_ADDR: "nope" }, "rms: CORE_ADDR must be host:port\n"],
      [{ RMS_ADMIN_TOKEN: "short", CORE_ADDR: core.address }, "rms: RMS_ADMIN_TOKEN must be at least 16 characters\n"],
    ] as const) {
      let stderr = "";
      const code = await runCli(["accounts", "list"], { env, stdout: () => {}, stderr: (t) => (stderr += t) });
      expect({ code, stderr }).toEqual({ code: 2, stderr: line });
    }
  });

  it("exits non-zero with one clear line when the core is down", async () => {
    const error = await run(process.execPath, [bin, "accounts", "create", "--json"], {
      env: { ...process.env, RMS_ADMIN_TOKEN: ADMIN_TOKEN, CORE_ADDR: "127.0.0.1:1" },
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 1, stdout: "" });
    expect((error as { stderr: string }).stderr).toBe("rms: cannot reach the core at 127.0.0.1:1 (is `npm start` running?)\n");
  });

  it("says the call ran past its deadline, naming it, when the core is up but never answers", async () => {
    // A core that accepts connections and never says anything (hung, or far behind on its work).
    const held = new Set<Socket>();
    const stub = createServer((socket) => held.add(socket.on("error", () => undefined)));
    await new Promise<void>((resolve) => stub.listen(0, "127.0.0.1", resolve));
    const address = `127.0.0.1:${(stub.address() as AddressInfo).port}`;
    try {
      let stderr = "";
      const started = Date.now();
      const code = await runCli(["keys", "create", "--account", "acct_x", "--kind", "secret", "--mode", "test", "--json"], {
        env: { RMS_ADMIN_TOKEN: ADMIN_TOKEN, CORE_ADDR: address },
        stdout: () => {},
        stderr: (t) => (stderr += t),
      });
      console.log(`rms keys create against a core that never answers: exit ${code} after ${Date.now() - started} ms (deadline ${CALL_DEADLINE_MS} ms)`);
      expect({ code, stderr }).toEqual({
        code: 1,
        stderr:
          `rms: the core at ${address} did not answer within the 5 s deadline (DEADLINE_EXCEEDED): it is up but overloaded, or its database ` +
          `answers slowly; a change asked for may still have been made\n`,
      });
    } finally {
      for (const socket of held) socket.destroy();
      stub.close();
    }
  });

  it("refuses a wrong admin token", async () => {
    const error = await run(process.execPath, [bin, "accounts", "create"], {
      env: { ...process.env, RMS_ADMIN_TOKEN: "wrong-token-wrong-token", CORE_ADDR: core.address },
    }).catch((e: unknown) => e);
    expect((error as { stderr: string }).stderr).toContain("refused the admin token");
    expect((error as { stderr: string }).stderr).toContain("RMS_ADMIN_TOKEN");
  });

  it("refusing a wrong admin token from a data directory, names the token file it read and RMS_DATA_DIR", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "rms-cli-token-"));
    try {
      await writeFile(join(dataDir, "admin-token"), "a-token-of-another-stack-0123456789\n");
      let stderr = "";
      const code = await runCli(["accounts", "list"], {
        env: { RMS_DATA_DIR: dataDir, CORE_ADDR: core.address },
        stdout: () => {},
        stderr: (t) => (stderr += t),
      });
      expect(code).toBe(1);
      expect(stderr).toContain(`refused the admin token read from ${join(dataDir, "admin-token")}`);
      expect(stderr).toContain(`RMS_DATA_DIR=${dataDir}`);
      expect(stderr.trim().split("\n")).toHaveLength(1);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe("rms dashboard", () => {
  it("prints a sign-in link whose restricted key has the scopes asked for, and refuses bad arguments", async () => {
    const account = (await rms("accounts", "create", "--json")).json()[0];
    const session = await rms(
      "dashboard",
      "--account",
      account.id,
      "--mode",
      "live",
      "--read-only",
      "--expires-in",
      "600",
      "--origin",
      "https://dash.example:9443/",
      "--json",
    );
    expect(session.code).toBe(0);
    const printed = session.json()[0];
    expect(printed).toMatchObject({ object: "dashboard_session", read_only: true, api_key: expect.stringMatching(/^key_/) });
    expect(printed.url).toMatch(/^https:\/\/dash\.example:9443\/dashboard\/#key=rk_live_[0-9A-Za-z]{32}$/);
    expect(printed.expires_at).toBeGreaterThan(Date.now() / 1000 + 590);
    const keys = (await rms("keys", "list", "--account", account.id, "--json")).json();
    expect(keys).toEqual([
      expect.objectContaining({ id: printed.api_key, kind: "restricted", livemode: true, scopes: expect.not.arrayContaining(["resources:write"]) }),
    ]);

    const human = await rms("dashboard", "--account", account.id, "--mode", "test");
    expect(human.stdout).toMatch(/^https:\/\/localhost:8443\/dashboard\/#key=rk_test_\S+\n\(signs in until .+; revoke with `rms keys revoke key_\S+`\)\n$/);

    expect((await rms("dashboard", "--account", account.id, "--mode", "test", "--expires-in", "86401")).code).toBe(2);
    expect((await rms("dashboard", "--account", account.id, "--mode", "test", "--origin", "http://plain")).code).toBe(2);
    const unknown = await rms("dashboard", "--account", "acct_0000000000000000000000", "--mode", "test");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/account/);
  });
});
