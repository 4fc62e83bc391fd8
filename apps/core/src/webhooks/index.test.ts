import { describe, expect, it } from "vitest";
import { isId, newId } from "../ids.js";
import * as webhooks from "./index.js";

describe("webhooks toolkit", () => {
  it("exports every piece the relay and workers wire", () => {
    for (const name of [
      "deliver",
      "checkEndpointUrl",
      "classifyAddress",
      "newEndpointSecret",
      "encryptSecret",
      "decryptSecret",
      "parseRetrySchedule",
      "nextAttemptAtMs",
      "afterAttempt",
      "signatureHeader",
    ]) {
      expect(typeof (webhooks as Record<string, unknown>)[name], name).toBe("function");
    }
  });

  it("attempt ids have their own prefix", () => {
    const id = newId("wa");
    expect(id).toMatch(/^wa_[0-9A-Za-z]{22}$/);
    expect(isId("wa", id)).toBe(true);
    expect(isId("we", id)).toBe(false);
  });
});
