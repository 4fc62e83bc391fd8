import { describe, expect, it } from "vitest";
import { publicForm } from "../public-form.js";
import { publicResource, resourcesJson } from "./render.js";
import { stateOf, type LoadedResource } from "./store.js";

const doc = {
  _id: "res_0000000000000000000001",
  name: 'é "quoted"',
  status: "paused",
  metadata: [
    { k: "__proto__", v: "kept" },
    { k: "2", v: "b" },
    { k: "a", v: "1" },
    { k: "a", v: "last" },
  ],
  created: 1_700_000_000,
  livemode: false,
} as unknown as LoadedResource;

describe("a page of resources as JSON text", () => {
  it("is the public form events and exports show, byte for byte", () => {
    expect(JSON.stringify(publicResource(doc))).toBe(JSON.stringify(publicForm({ ...stateOf(doc) }, "resource")));
    expect(resourcesJson([doc, doc])).toBe(JSON.stringify([publicForm({ ...stateOf(doc) }, "resource"), publicForm({ ...stateOf(doc) }, "resource")]));
    expect(resourcesJson([])).toBe("[]");
  });
});
