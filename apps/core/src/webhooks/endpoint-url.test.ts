import { describe, expect, it } from "vitest";
import { checkEndpointUrl, MAX_ENDPOINT_URL_LENGTH, type EndpointUrlProblem } from "./endpoint-url.js";

const strict = { allowPrivate: false };
const lenient = { allowPrivate: true };

describe("checkEndpointUrl", () => {
  it.each([
    ["https://hooks.example.com/rms", "https://hooks.example.com/rms"],
    ["https://HOOKS.Example.com:8443/a?b=c", "https://hooks.example.com:8443/a?b=c"],
    ["https://example.com.", "https://example.com./"],
    ["https://8.8.8.8/hook", "https://8.8.8.8/hook"],
    ["https://[2606:4700:4700::1111]/hook", "https://[2606:4700:4700::1111]/hook"],
  ])("accepts %s", (text, normalized) => {
    expect(checkEndpointUrl(text, strict)).toEqual({ ok: true, url: normalized });
  });

  it.each<[string, EndpointUrlProblem]>([
    ["not a url", "url_invalid"],
    ["/relative/path", "url_invalid"],
    [`https://example.com/${"a".repeat(MAX_ENDPOINT_URL_LENGTH)}`, "url_too_long"],
    ["http://hooks.example.com/", "url_scheme"],
    ["ftp://hooks.example.com/", "url_scheme"],
    ["file:///etc/passwd", "url_scheme"],
    ["https://user:pass@hooks.example.com/", "url_credentials"],
    ["https://user@hooks.example.com/", "url_credentials"],
    ["https://hooks.example.com/#frag", "url_fragment"],
    ["https://hooks.example.com/#", "url_fragment"],
    ["https://hooks.example.com:0/", "url_port"],
    ["https://127.0.0.1/", "url_blocked_address"],
    ["https://2130706433/", "url_blocked_address"], // decimal 127.0.0.1
    ["https://0x7f.1/", "url_blocked_address"], // hex 127.0.0.1
    ["https://0177.0.0.1/", "url_blocked_address"], // octal 127.0.0.1
    ["https://10.0.0.1/", "url_blocked_address"],
    ["https://169.254.169.254/latest/meta-data", "url_blocked_address"],
    ["https://100.100.100.200/", "url_blocked_address"],
    ["https://[::1]/", "url_blocked_address"],
    ["https://[::ffff:127.0.0.1]/", "url_blocked_address"],
    ["https://[64:ff9b::a9fe:a9fe]/", "url_blocked_address"],
    ["https://[2002:a00:1::]/", "url_blocked_address"],
    ["https://[fd00:ec2::254]/", "url_blocked_address"],
    ["https://[fe80::1]/", "url_blocked_address"],
    ["https://localhost/", "url_local_name"],
    ["https://api.localhost/", "url_local_name"],
    ["https://localhost./", "url_local_name"],
    ["https://printer.local/", "url_local_name"],
    ["https://metadata.google.internal/", "url_local_name"],
    ["https://router.home.arpa/", "url_local_name"],
    ["https://intranet/", "url_local_name"],
  ])("refuses %s (%s)", (text, problem) => {
    const result = checkEndpointUrl(text, strict);
    expect(result).toMatchObject({ ok: false, problem });
    expect(result.ok ? "" : result.message).not.toBe("");
  });

  it("names the blocked range in the message", () => {
    expect(checkEndpointUrl("https://169.254.169.254/", strict)).toMatchObject({ message: expect.stringContaining("metadata") });
  });

  it.each([
    ["https://[::]/", "is an unspecified address"],
    ["https://0.0.0.0/", "is an unspecified address"],
    ["https://100.64.0.1/", "is a carrier-grade NAT address"],
    ["https://[fe80::1]/", "is a link-local address"],
    ["https://[64:ff9b:1::a00:1]/", "is a local-use NAT64 address"],
  ])("words the range of %s in plain English (%s)", (text, phrase) => {
    expect(checkEndpointUrl(text, strict)).toMatchObject({ message: expect.stringContaining(phrase) });
  });

  it("with allowPrivate admits http, loopback and local names, but never credentials or other schemes", () => {
    expect(checkEndpointUrl("http://127.0.0.1:4000/hook", lenient)).toEqual({ ok: true, url: "http://127.0.0.1:4000/hook" });
    expect(checkEndpointUrl("https://localhost/hook", lenient)).toMatchObject({ ok: true });
    expect(checkEndpointUrl("http://u:p@127.0.0.1/", lenient)).toMatchObject({ ok: false, problem: "url_credentials" });
    expect(checkEndpointUrl("ftp://127.0.0.1/", lenient)).toMatchObject({ ok: false, problem: "url_scheme" });
  });
});
