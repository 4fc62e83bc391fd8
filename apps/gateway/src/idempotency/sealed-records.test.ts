import { describe, expect, it } from "vitest";
import { recordSealer } from "./sealed-records.js";

describe("recordSealer", () => {
  const body = Buffer.from('{"secret":"whsec_AAAA"}');
  it("opens what it sealed, for the same scope, under the same credential (every gateway of an installation)", () => {
    const sealed = recordSealer("gateway-credential-0123456789").seal(body, "acct_1/test/k");
    expect(sealed.includes(Buffer.from("whsec_"))).toBe(false);
    expect(recordSealer("gateway-credential-0123456789").open(sealed, "acct_1/test/k")).toEqual(body);
  });
  it("refuses another scope, another credential and a changed byte", () => {
    const sealer = recordSealer("gateway-credential-0123456789");
    const sealed = sealer.seal(body, "acct_1/test/k");
    expect(() => sealer.open(sealed, "acct_2/test/k")).toThrow();
    expect(() => recordSealer("another-credential-0123456789").open(sealed, "acct_1/test/k")).toThrow();
    const changed = Buffer.from(sealed);
    changed[14] = (changed[14] ?? 0) ^ 1;
    expect(() => sealer.open(changed, "acct_1/test/k")).toThrow();
  });
});
