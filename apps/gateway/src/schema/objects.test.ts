import { create } from "@bufbuild/protobuf";
import { ResourceSchema, ResourceStatus } from "@rms/proto";
import { describe, expect, it } from "vitest";
import { ApiError } from "../errors.js";
import { ResourceSearchResultObject } from "../routes/resources/search.js";
import { DeletedResourceObject, pageOf, ResourceListObject, ResourceObject } from "../routes/resources/objects.js";
import { renderAnswer, type PublicObject } from "./objects.js";

const resource = create(ResourceSchema, {
  id: "res_0000000000000000000001",
  name: "n",
  status: ResourceStatus.PAUSED,
  metadata: [
    { key: "__proto__", value: "kept" },
    { key: "b", value: "2" },
  ],
  created: 1_700_000_000n,
});

/** The described fields, in order, are exactly the rendered ones. */
function expectDescribes(object: PublicObject<never>, rendered: Record<string, unknown>) {
  expect(Object.keys(rendered)).toEqual(object.schema["required"]);
  expect(Object.keys(rendered)).toEqual(Object.keys(object.schema["properties"] as object));
  expect(object.schema["additionalProperties"]).toBe(false);
}

describe("a public object renders what it describes", () => {
  it("renders a resource in contract order, metadata keys as data", () => {
    const rendered = ResourceObject.render(resource);
    expectDescribes(ResourceObject as PublicObject<never>, rendered);
    expect(JSON.stringify(rendered)).toBe(
      '{"id":"res_0000000000000000000001","object":"resource","name":"n","status":"paused","metadata":{"__proto__":"kept","b":"2"},"created":1700000000}',
    );
  });

  it("renders the list envelope and the deletion result, each referring to the resource schema by name", () => {
    const list = ResourceListObject.render({ items: [resource], hasMore: true });
    expectDescribes(ResourceListObject as PublicObject<never>, list);
    expect(list).toMatchObject({ object: "list", url: "/v1/resources", has_more: true });
    expect((ResourceListObject.schema["properties"] as Record<string, { items: unknown }>)["data"]!.items).toEqual({ $ref: "#/components/schemas/Resource" });
    expect(ResourceListObject.uses).toEqual([ResourceObject]);
    const deleted = DeletedResourceObject.render({ id: resource.id });
    expectDescribes(DeletedResourceObject as PublicObject<never>, deleted);
    expect(JSON.stringify(deleted)).toBe('{"id":"res_0000000000000000000001","object":"resource","deleted":true}');
  });

  it("writes a page core sent as JSON text byte for byte as the page rendered from messages", () => {
    // Core's text of `resource` (core resources.test.ts checks core writes exactly this).
    const itemsJson = JSON.stringify([ResourceObject.render(resource), ResourceObject.render({ ...resource, id: "res_0000000000000000000000" })]);
    const messages = [resource, { ...resource, id: "res_0000000000000000000000" }];
    for (const hasMore of [true, false]) {
      const fromText = renderAnswer(ResourceListObject, pageOf({ dataJson: itemsJson }, hasMore));
      const fromMessages = renderAnswer(ResourceListObject, { items: messages, hasMore });
      expect(fromText.text).toBe(fromMessages.text);
      expect(fromText.object).toBeUndefined();
      expect(JSON.parse(fromMessages.text)).toEqual(fromMessages.object);
      for (const nextPage of ["page_token", null]) {
        const fromSearchText = renderAnswer(ResourceSearchResultObject, { ...pageOf({ dataJson: itemsJson }, hasMore), nextPage }).text;
        expect(fromSearchText).toBe(renderAnswer(ResourceSearchResultObject, { items: messages, hasMore, nextPage }).text);
      }
    }
    expect(renderAnswer(ResourceListObject, pageOf({ dataJson: "[]" }, false)).text).toBe('{"object":"list","url":"/v1/resources","has_more":false,"data":[]}');
    // The wire form of such a page (what the OpenAPI checks read) is the same object.
    expect(ResourceListObject.render(pageOf({ dataJson: itemsJson }, true))).toEqual(ResourceListObject.render({ items: messages, hasMore: true }));
  });

  it("refuses a missing object or an unknown status from core as internal_error", () => {
    for (const render of [() => ResourceObject.render(undefined), () => ResourceObject.render({ ...resource, status: ResourceStatus.UNSPECIFIED })]) {
      expect(render).toThrow(ApiError);
      try {
        render();
      } catch (error) {
        expect((error as ApiError).code).toBe("internal_error");
      }
    }
  });
});
