// The dashboard's session in a real browser (the system's Chromium) against the real stack: the header names the
// account and mode, a sign-in link for another account asks before it replaces the tab's key, and signing out of a
// session ends it at the API (its key is refused afterwards).
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, chromium, type Page, type Request } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BrowserErrors } from "./browser-errors";
import { findOrInstallChromium } from "./chromium";
import { type Stack, startStack, trustDevelopmentCertificate } from "./stack";

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = "1";

const browserFound = await findOrInstallChromium(process.env, join(tmpdir(), "rms-chromium-install.log"), (line) => console.log(`dashboard e2e: ${line}`));
if ("missing" in browserFound) console.log(`dashboard e2e: skipped: ${browserFound.missing}`);

describe.skipIf("missing" in browserFound)("the dashboard's session in Chromium", () => {
  let stack: Stack;
  let browser: Browser;
  let page: Page;
  let other: { account: string; link: string };
  const browserErrors = new BrowserErrors();
  const url = (path: string) => `${stack.origin}/dashboard${path}`;
  const tabKey = () => page.evaluate(() => sessionStorage.getItem("rms.dashboard.key"));

  beforeAll(async () => {
    if ("missing" in browserFound) return;
    await trustDevelopmentCertificate();
    stack = await startStack();
    const account = (JSON.parse(await stack.rms(["accounts", "create", "--json"])) as { id: string }).id;
    const printed = await stack.rms(["dashboard", "--account", account, "--mode", "live", "--origin", stack.origin]);
    other = { account, link: /https:\/\/\S+#key=rk_live_\S+/.exec(printed)![0] };
    browser = await chromium.launch({ executablePath: browserFound.path, headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    page = await context.newPage();
    browserErrors.watch(page);
  });

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  });

  it("shows the account and mode it is in", async () => {
    await page.goto(stack.dashboardLink);
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    await page.getByTestId("account").getByText(stack.accountId).waitFor();
    await page.getByText("Test mode").waitFor();
    await page.getByText("dashboard session").waitFor();
  });

  it("asks before a link of another account replaces its key; staying keeps the tab as it was", async () => {
    const before = await tabKey();
    await page.goto(url("/events"));
    await page.goto(other.link);
    await page.getByRole("heading", { name: "Switch to the link's sign-in?" }).waitFor();
    await page.getByTestId("current-account").getByText(`${stack.accountId} (test mode)`).waitFor();
    await page.getByTestId("link-account").getByText(`${other.account} (live mode)`).waitFor();
    expect(page.url()).not.toContain("key=");
    expect(await tabKey()).toBe(before);
    await page.getByRole("button", { name: "Stay signed in as before" }).click();
    await page.getByTestId("account").getByText(stack.accountId).waitFor();
    expect(await tabKey()).toBe(before);
  });

  it("asks too when the link is pasted into the open tab (only the fragment changes, nothing loads)", async () => {
    const before = await tabKey();
    await page.goto(url("/"));
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    await page.evaluate(() => {
      (window as unknown as { notReloaded: boolean }).notReloaded = true;
    });
    await page.goto(other.link);
    await page.getByRole("heading", { name: "Switch to the link's sign-in?" }).waitFor();
    expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
    expect(page.url()).not.toContain("key=");
    expect(await tabKey()).toBe(before);
    await page.getByRole("button", { name: "Stay signed in as before" }).click();
    await page.getByTestId("account").getByText(stack.accountId).waitFor();
    expect(await tabKey()).toBe(before);
  });

  it("switches when asked to, and then names the link's account and mode", async () => {
    await page.goto(url("/events"));
    await page.goto(other.link);
    await page.getByRole("button", { name: "Switch to the link's key" }).click();
    await page.getByTestId("account").getByText(other.account).waitFor();
    await page.getByText("Live mode").waitFor();
    expect(await tabKey()).toMatch(/^rk_live_/);
  });

  it("signing out of a session ends it: its key is refused by the API afterwards", async () => {
    const key = (await tabKey())!;
    expect((await stack.api("GET", "/v1/resources", undefined, key)).status).toBe(200);
    // The revocation is sent as the key is forgotten; its answer may come after the sign-in page (a busy machine).
    const revoked = page.waitForResponse((r) => r.url().endsWith("/revoke") && r.request().method() === "POST");
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in to the rms dashboard" }).waitFor();
    expect(await page.evaluate(() => Object.keys(sessionStorage).filter((name) => name.startsWith("rms.")))).toEqual([]);
    expect((await revoked).status()).toBe(200);
    const refused = await stack.api("GET", "/v1/resources", undefined, key);
    expect(refused.status).toBe(401);
    expect((refused.body["error"] as { code: string }).code).toBe("api_key_revoked");
  });

  it("a request of an ended session answered after the next sign-in leaves the tab signed in with the new key", async () => {
    // A page's request sent with the session's key just before its sign-out, answered 401 once the session has ended
    // and another key has signed in (a slow gateway: a busy machine, a long call): the refusal is the old key's.
    const session = await stack.api("POST", "/v1/dashboard_sessions", { expires_in: 600 });
    expect(session.status).toBe(201);
    // The session's key is in its sign-in link (`api_key` is the key's id).
    const sessionKey = /#key=(rk_test_[0-9A-Za-z]+)/.exec(session.body.url as string)![1]!;
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    const p = await context.newPage();
    browserErrors.watch(p);
    // The overview's list of endpoints (not the scope probe's limit=1), held while it carries the session's key.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const held = new Promise<Request>((resolve) =>
      p.route(/\/v1\/webhook_endpoints\?limit=100$/, async (route) => {
        if (route.request().headers().authorization !== `Bearer ${sessionKey}`) return route.continue();
        resolve(route.request());
        await released;
        // The page is gone when the test failed before the release.
        await route.continue().catch(() => {});
      }),
    );
    try {
      await p.goto(session.body.url as string);
      await p.getByRole("heading", { name: "Overview" }).waitFor();
      await p.getByText("dashboard session").waitFor();
      const request = await held;
      const revoked = p.waitForResponse((r) => r.url().endsWith("/revoke") && r.request().method() === "POST");
      await p.getByRole("button", { name: "Sign out" }).click();
      expect((await revoked).status()).toBe(200);
      expect((await stack.api("GET", "/v1/resources?limit=1", undefined, sessionKey)).status).toBe(401);
      await p.getByLabel("API key").fill(stack.secretKey);
      await p.getByRole("button", { name: "Sign in" }).click();
      await p.getByRole("heading", { name: "Overview" }).waitFor();
      // The held request goes on now and is refused: the session's key is revoked.
      const refused = p.waitForResponse((r) => r.request() === request);
      const finished = p.waitForEvent("requestfinished", { predicate: (r) => r === request });
      release();
      expect((await refused).status()).toBe(401);
      await finished;
      // A page read with the tab's key after it: the tab is still signed in, with the key signed in last.
      const signInPage = p.getByRole("heading", { name: "Sign in to the rms dashboard" });
      await Promise.race([
        (async () => {
          await p.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Events" }).click();
          await p.getByRole("heading", { name: "Events", exact: true }).waitFor();
          await p.getByRole("table", { name: "Events" }).or(p.getByText("No events.")).first().waitFor();
        })(),
        signInPage.waitFor().then(async () => {
          throw new Error(`the old key's refusal signed the tab out: ${await p.getByRole("alert").textContent()}`);
        }),
      ]);
      expect(await signInPage.count()).toBe(0);
      expect(await p.evaluate(() => sessionStorage.getItem("rms.dashboard.key"))).toBe(stack.secretKey);
    } finally {
      release();
      await context.close();
    }
  });

  it("loaded nothing the CSP refused and threw nothing", () => {
    expect(browserErrors.unexpected([400, 401, 403, 404])).toEqual([]);
  });
});
