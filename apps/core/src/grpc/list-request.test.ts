import { expect, it } from "vitest";
import { newId } from "../ids.js";
import { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX } from "@rms/proto";
import { pageOf } from "./list-request.js";

const paging = (fields: Partial<{ limit: number; startingAfter: string; endingBefore: string }>) => ({
  limit: 0,
  startingAfter: "",
  endingBefore: "",
  ...fields,
});

it("takes the default limit for 0 and keeps the bounds", () => {
  expect(pageOf(paging({}), "job", "job")).toEqual({ limit: LIST_LIMIT_DEFAULT });
  expect(pageOf(paging({ limit: 1 }), "job", "job").limit).toBe(1);
  expect(pageOf(paging({ limit: LIST_LIMIT_MAX }), "job", "job").limit).toBe(LIST_LIMIT_MAX);
  expect(() => pageOf(paging({ limit: LIST_LIMIT_MAX + 1 }), "job", "job")).toThrow(expect.objectContaining({ code: "limit_invalid", param: "limit" }));
  expect(() => pageOf(paging({ limit: -1 }), "job", "job")).toThrow(expect.objectContaining({ code: "limit_invalid" }));
});

it("accepts a cursor only as an id of the listed kind, and only one of the two", () => {
  const id = newId("job");
  expect(pageOf(paging({ startingAfter: id }), "job", "job")).toEqual({ limit: LIST_LIMIT_DEFAULT, startingAfter: id });
  expect(pageOf(paging({ endingBefore: id }), "job", "job")).toEqual({ limit: LIST_LIMIT_DEFAULT, endingBefore: id });
  expect(() => pageOf(paging({ startingAfter: newId("res") }), "job", "job")).toThrow(
    expect.objectContaining({ code: "parameter_invalid", param: "starting_after", message: expect.stringContaining("is not a job id") }),
  );
  expect(() => pageOf(paging({ startingAfter: id, endingBefore: id }), "job", "job")).toThrow(expect.objectContaining({ param: "ending_before" }));
});
