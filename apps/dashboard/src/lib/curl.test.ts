import { describe, expect, it } from "vitest";
import { curlOf, queryOf, shellQuote } from "./curl";

describe("copy as curl", () => {
  it("a GET with its parameters in bracket form, the key masked", () => {
    const text = curlOf(
      {
        method: "GET",
        path: "/v1/resources",
        key_kind: "secret",
        livemode: false,
        idempotency_key: null,
        request_params: { limit: 3, created: { gte: 1 }, ids: ["res_a", "res_b"] },
      },
      "https://localhost:8443",
    );
    expect(text).toBe(
      "curl -X GET 'https://localhost:8443/v1/resources?limit=3&created%5Bgte%5D=1&ids%5B%5D=res_a&ids%5B%5D=res_b' \\\n  -H 'Authorization: Bearer " +
        "sk_test_********'",
    );
    expect(text).not.toMatch(/sk_test_[0-9A-Za-z]{8}/);
  });

  it("a POST with its JSON body and Idempotency-Key; quotes in values stay one shell word", () => {
    const text = curlOf(
      { method: "POST", path: "/v1/resources", key_kind: "restricted", livemode: true, idempotency_key: "order-42", request_params: { name: "it's" } },
      "https://h",
    );
    expect(text).toContain("-H 'Authorization: Bearer rk_live_********'");
    expect(text).toContain("-H 'Idempotency-Key: order-42'");
    expect(text).toContain(`-d '{"name":"it'\\''s"}'`);
  });

  it("quotes and queries", () => {
    expect(shellQuote("a'b")).toBe("'a'\\''b'");
    expect(queryOf({ metadata: { team: "a b" } })).toBe("metadata%5Bteam%5D=a+b");
  });
});
