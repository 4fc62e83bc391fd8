import { describe, expect, it } from "vitest";
import { KEPT_BYTES, keep, mayHoldSecret, redact, redactText, REDACTED } from "./redact.js";

describe("redact", () => {
  it("replaces key material wherever it is, in text, values and field names", () => {
    const keys = [`sk_test_${"a".repeat(32)}`, `sk_live_${"B".repeat(32)}`, `rk_test_${"c".repeat(32)}`, `pk_live_${"d".repeat(32)}`];
    for (const key of keys) {
      expect(redactText(`Bearer ${key}`)).toBe(`Bearer ${REDACTED}`);
      expect(redactText(`x_${key}_y`)).not.toContain(key.slice(8));
    }
    const secret = `whsec_${"Q".repeat(43)}=`;
    const privateKey = `whsk_${"k/+".repeat(14)}=`;
    expect(redact({ list: [secret, { deep: `see ${privateKey}` }], [keys[0]!]: 1 })).toEqual({ list: [REDACTED, { deep: `see ${REDACTED}` }], [REDACTED]: 1 });
    // The public key of a v1a endpoint is not a secret.
    expect(redactText(`whpk_${"p".repeat(43)}=`)).toBe(`whpk_${"p".repeat(43)}=`);
  });

  it("replaces the value of a secret field whatever it looks like, and keeps the rest", () => {
    expect(redact({ id: "we_1", secret: "anything", nested: { Authorization: "Basic eA==", private_key: "pem" }, empty: { secret: null } })).toEqual({
      id: "we_1",
      secret: REDACTED,
      nested: { Authorization: REDACTED, private_key: REDACTED },
      empty: { secret: null },
    });
    expect(redact({ name: "plain", n: 3, ok: true, none: null })).toEqual({ name: "plain", n: 3, ok: true, none: null });
  });
});

describe("mayHoldSecret (a rendered answer kept as it is)", () => {
  it("says yes for every value redact would change, as its JSON text shows it", () => {
    const changed = [
      { list: [`sk_test_${"a".repeat(32)}`] },
      { [`whsec_${"Q".repeat(8)}`]: 1 },
      { secret: "anything" },
      { nested: { AUTHORIZATION: "Basic eA==" } },
      { Private_Key: "pem" },
      // The Kelvin sign lowercases to k: a secret field's name for redact.
      { "api_\u212Aey_secret": "x" },
    ];
    for (const value of changed) {
      expect(JSON.stringify(redact(value))).not.toBe(JSON.stringify(value));
      expect(mayHoldSecret(JSON.stringify(value)), JSON.stringify(value)).toBe(true);
    }
  });

  it("says no for an answer with nothing to redact", () => {
    const text = '{"id":"res_0000000000000000000001","object":"resource","name":"secret plan","metadata":{"a":"sk_"},"has_more":false}';
    expect(mayHoldSecret(text)).toBe(false);
    expect(redact(JSON.parse(text))).toEqual(JSON.parse(text));
  });
});

describe("keep (8 KiB)", () => {
  it("keeps an object that fits whole, without truncated", () => {
    const small = { name: "x", metadata: { a: "1" } };
    expect(keep(small)).toEqual(small);
  });

  it("cuts a longer one to at most 8 KiB of JSON, keeping leading fields whole and marking it truncated", () => {
    const list = {
      object: "list",
      url: "/v1/resources",
      has_more: true,
      data: Array.from({ length: 100 }, (_, i) => ({ id: `res_${i}`, name: "n".repeat(200) })),
    };
    const kept = keep(list);
    expect(kept["truncated"]).toBe(true);
    expect(kept).toMatchObject({ object: "list", url: "/v1/resources", has_more: true });
    const data = kept["data"] as { id: string }[];
    expect(data.length).toBeGreaterThan(10);
    expect(data.length).toBeLessThan(100);
    expect(data[0]).toEqual(list.data[0]);
    expect(Buffer.byteLength(JSON.stringify(kept))).toBeLessThanOrEqual(KEPT_BYTES);
    expect(Buffer.byteLength(JSON.stringify(kept))).toBeGreaterThan(KEPT_BYTES - 400);
  });

  it("cuts one long string by code points, multi-byte ones included, within the bound", () => {
    const kept = keep({ name: "é😀".repeat(5_000) });
    expect(kept["truncated"]).toBe(true);
    const text = kept["name"] as string;
    expect(text.length).toBeGreaterThan(1_000);
    expect("é😀".repeat(5_000).startsWith(text)).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(kept))).toBeLessThanOrEqual(KEPT_BYTES);
  });
});
