// The browser tests' record of errors in Chromium against a scripted server: a 503 with Retry-After that a retry got
// past is let through (and printed); a call that stayed 503, one without Retry-After, a 500, a refused load and a
// thrown error are not.
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BrowserErrors } from "./browser-errors";
import { findOrInstallChromium } from "./chromium";

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = "1";

const browserFound = await findOrInstallChromium(process.env, join(tmpdir(), "rms-chromium-install.log"), (line) => console.log(`dashboard e2e: ${line}`));

const PAGE = `<script>
(async () => {
  await fetch("/busy-once");
  await fetch("/busy-once");
  await fetch("/busy-always");
  await fetch("/busy-always");
  await fetch("/unavailable-bare");
  await fetch("/unavailable-bare");
  await fetch("/broken");
  await fetch("/gone");
  document.title = "done";
  throw new Error("thrown by the page");
})();
</script>`;

describe.skipIf("missing" in browserFound)("the browser tests' record of errors", () => {
  let server: Server;
  let origin: string;
  let browser: Browser;

  beforeAll(async () => {
    if ("missing" in browserFound) return;
    const seen = new Map<string, number>();
    server = createServer((req, res) => {
      const path = req.url ?? "/";
      const n = (seen.get(path) ?? 0) + 1;
      seen.set(path, n);
      if (path === "/") res.writeHead(200, { "Content-Type": "text/html" }).end(PAGE);
      else if (path === "/busy-once") res.writeHead(n === 1 ? 503 : 200, { "Retry-After": "1" }).end("{}");
      else if (path === "/busy-always") res.writeHead(503, { "Retry-After": "1" }).end("{}");
      else if (path === "/unavailable-bare") res.writeHead(n === 1 ? 503 : 200).end("{}");
      else if (path === "/broken") res.writeHead(500).end("{}");
      else res.writeHead(404).end("{}");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    browser = await chromium.launch({ executablePath: browserFound.path, headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
  });

  afterAll(async () => {
    await browser?.close();
    server?.close();
  });

  it("counts every error but the expected statuses and a 503 with Retry-After that the same call got past", async () => {
    const errors = new BrowserErrors();
    const page = await browser.newPage();
    errors.watch(page);
    const thrown = page.waitForEvent("pageerror");
    await page.goto(`${origin}/`);
    await thrown;
    const unexpected = errors.unexpected([404]).join("\n");
    expect(unexpected).not.toContain(`${origin}/busy-once`);
    expect(unexpected).not.toContain(`${origin}/gone`);
    expect(unexpected).toContain(`${origin}/busy-always`);
    expect(unexpected).toContain(`${origin}/unavailable-bare`);
    expect(unexpected).toContain(`${origin}/broken`);
    expect(unexpected).toContain("thrown by the page");
    await page.close();
  });
});
