// docs/internal-clients.md says which methods the built-in gateway entry may call: the rows of the domains decide it.
import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { METHOD_CALLERS, SERVED_METHODS } from "../domains.js";

const doc = readFileSync(new URL("../../../../docs/internal-clients.md", import.meta.url), "utf8");

it("lists the gateway's methods as the domains' rows give them", () => {
  const at = doc.indexOf("<!-- gateway-methods:");
  expect(at).toBeGreaterThan(0);
  const paragraph = doc.slice(at, doc.indexOf("\n\n", at));
  const listed = [...paragraph.matchAll(/`(rms\.v1\.[A-Za-z]+\/[A-Za-z*]+)`/g)].flatMap(([, entry]) => {
    const service = /^(.+)\/\*$/.exec(entry!)?.[1];
    return service === undefined ? [`/${entry}`] : [...SERVED_METHODS].filter((m) => m.startsWith(`/${service}/`));
  });
  const gateway = Object.keys(METHOD_CALLERS).filter((m) => METHOD_CALLERS[m]!.includes("gateway"));
  expect(listed.sort()).toEqual(gateway.sort());
});
