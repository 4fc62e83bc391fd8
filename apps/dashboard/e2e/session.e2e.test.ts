// The dashboard's session in a real browser (the system's Chromium) against the real stack: the header names the
// account and mode, a sign-in link for another account asks before it replaces the tab's key, and signing out of a
// session ends it at the API (its key is refused afterwards).
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
  const consoleErrors: string[] = [];
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
    page.on("console", (message) => {
      if (message.type() === "error") consoleErrors.push(`${page.url()}: ${message.text()}`);
    });
    page.on("pageerror", (error) => consoleErrors.push(`${page.url()}: ${error.message}`));
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
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in to the rms dashboard" }).waitFor();
    expect(await page.evaluate(() => Object.keys(sessionStorage).filter((name) => name.startsWith("rms.")))).toEqual([]);
    // The revocation is sent as the key is forgotten; its answer may come just after.
    let refused = await stack.api("GET", "/v1/resources", undefined, key);
    for (let i = 0; i < 50 && refused.status !== 401; i++) {
      await new Promise((r) => setTimeout(r, 100));
      refused = await stack.api("GET", "/v1/resources", undefined, key);
    }
    expect(refused.status).toBe(401);
    expect((refused.body["error"] as { code: string }).code).toBe("api_key_revoked");
  });

  it("loaded nothing the CSP refused and threw nothing", () => {
    expect(consoleErrors.filter((e) => !/Failed to load resource: the server responded with a status of (400|401|403|404)/.test(e))).toEqual([]);
  });
});
