import { describe, expect, it } from "vitest";
import { EVENT_TYPES, exampleId, ID_PREFIXES, idPattern, SCOPES, VOCABULARIES, withImpliedScopes } from "./index.js";

describe("the domains' vocabularies", () => {
  it("name each id prefix, event type, scope and domain once", () => {
    for (const list of [ID_PREFIXES, EVENT_TYPES, SCOPES, VOCABULARIES.map((v) => v.domain)]) expect(new Set(list).size).toBe(list.length);
  });

  it("derive the lists in the order the API has always shown them", () => {
    // The order is observable: a secret key's scopes, the known types an error message lists. A new domain
    // goes last (index.ts), so these stay first, in this order, whatever kinds come after them.
    expect(SCOPES.slice(0, 6)).toEqual(["resources:read", "resources:write", "jobs:read", "jobs:write", "webhooks:write", "events:read"]);
    expect(EVENT_TYPES.slice(0, 6)).toEqual(["resource.created", "resource.updated", "resource.deleted", "job.succeeded", "job.failed", "job.canceled"]);
    expect(ID_PREFIXES).toEqual(expect.arrayContaining(["acct", "evt", "job", "key", "res", "wa", "we"]));
    // The webhook endpoints' operational event follows the jobs' (its domain comes after theirs).
    expect(EVENT_TYPES[6]).toBe("webhook_endpoint.disabled");
  });

  it("give each event type to the domain of the object it is about, and each scope a read or write", () => {
    for (const { domain, eventTypes, scopes } of VOCABULARIES) {
      // `webhook_endpoint.disabled` is the `webhook-endpoints` domain's.
      for (const type of eventTypes) expect(`${type.split(".")[0]!.replaceAll("_", "-")}s`).toBe(domain);
      for (const scope of scopes) expect(scope).toMatch(/^[a-z_]+:(read|write)$/);
    }
  });

  it("expand a scope to the ones it implies", () => {
    expect(withImpliedScopes(["jobs:write", "resources:read"])).toEqual(["resources:read", "jobs:read", "jobs:write"]);
    expect(withImpliedScopes([])).toEqual([]);
  });

  it("shape ids by one pattern", () => {
    expect(new RegExp(`^${idPattern("job")}$`).test(exampleId("job"))).toBe(true);
    expect(exampleId("res")).toBe("res_0000000000000000000000");
    expect(new RegExp(`^${idPattern("res")}$`).test("res_000000000000000000000")).toBe(false);
  });
});
