import { describe, expect, it } from "vitest";
import { shortUserAgent } from "./user-agent";

describe("short user agents", () => {
  it("names browsers and tools with their version", () => {
    expect(shortUserAgent("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.0.0 Safari/537.36")).toBe(
      "Headless Chrome 156",
    );
    expect(shortUserAgent("Mozilla/5.0 (Windows NT 10.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36 Edg/130.0.1")).toBe(
      "Edge 130.0.1",
    );
    expect(shortUserAgent("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15")).toBe(
      "Safari 17.4",
    );
    expect(shortUserAgent("curl/8.5.0")).toBe("curl 8.5.0");
    expect(shortUserAgent(null)).toBe("—");
  });
});
