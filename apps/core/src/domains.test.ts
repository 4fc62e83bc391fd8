import { methodPath, VOCABULARIES } from "@rms/proto";
import { expect, it } from "vitest";
import { DOMAINS, HEALTH_NAMES, METHOD_CALLERS } from "./domains.js";

const services = DOMAINS.flatMap((d) => d.services.map((s) => s.service));

it("serves each service once, from one domain", () => {
  const names = services.map((s) => s.typeName);
  expect(new Set(names).size).toBe(names.length);
  expect(names).toEqual(expect.arrayContaining(["rms.v1.ResourceService", "rms.v1.AdminService"]));
});

it("answers health for the server and every served service", () => {
  expect(HEALTH_NAMES).toEqual(["", ...services.map((s) => s.typeName)]);
});

it("gives every method of every served service at least one built-in caller, and lists nothing else", () => {
  const methods = services.flatMap((s) => s.methods.map(methodPath));
  expect(Object.keys(METHOD_CALLERS).sort()).toEqual([...methods].sort());
  for (const path of methods) expect(METHOD_CALLERS[path]!.length, path).toBeGreaterThan(0);
});

it("reflects the proto file of every served service", () => {
  const files = new Set(DOMAINS.flatMap((d) => d.files));
  for (const service of services) expect(files.has(service.file), service.typeName).toBe(true);
});

it("serves the domains whose vocabularies @rms/proto declares, one each (but the gateway's own)", () => {
  const coreDomains = VOCABULARIES.filter((v) => !("servedBy" in v && v.servedBy === "gateway"));
  expect(DOMAINS.map((d) => d.name).sort()).toEqual(coreDomains.map((v) => v.domain).sort());
});
