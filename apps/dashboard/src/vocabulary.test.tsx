// The dashboard offers every name the API's domains declare: a scope, event type, job type or status a domain adds
// to @rms/proto is probed, listed in the filters and offered in the forms, or this test fails. The expected lists
// are read from @rms/proto itself, never from the dashboard's modules, so a hand-kept list here cannot hide one.
import * as proto from "@rms/proto/vocabulary";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { type FilterSpec, FilterFields } from "./components/ListPage";
import { missingScopeReason, SCOPE_PROBES } from "./lib/scopes";
import { EVENT_FILTERS } from "./pages/Events";
import { JOB_FILTERS } from "./pages/Jobs";
import { RESOURCE_FILTERS } from "./pages/Resources";
import { EventChoices } from "./pages/Webhooks";

/** The `<option>` values a filter spec's form draws. */
function optionValues(spec: FilterSpec, field: string): string[] {
  const html = renderToStaticMarkup(<FilterFields spec={{ ...spec, fields: spec.fields.filter((f) => f.name === field) }} values={{}} onChange={() => {}} />);
  return [...html.matchAll(/<option value="([^"]*)"/g)].map((m) => m[1]!).filter((v) => v !== "");
}

describe("the dashboard shows every name the API's vocabularies declare", () => {
  it("probes every scope a key can be granted, and can say when one is missing", () => {
    for (const scope of proto.SCOPES) {
      expect(SCOPE_PROBES[scope], `no probe learns ${scope}`).toBeDefined();
      expect(missingScopeReason([], scope)).toContain(scope);
    }
  });

  it("filters events by every type and every domain's prefix, and offers every type to a new endpoint", () => {
    const offered = optionValues(EVENT_FILTERS, "type");
    for (const type of proto.EVENT_TYPES) expect(offered, `the events filter lacks ${type}`).toContain(type);
    expect(offered).toEqual(expect.arrayContaining(["resource.*", "job.*"]));
    const form = renderToStaticMarkup(<EventChoices events={["*"]} toggle={() => {}} />);
    for (const type of proto.EVENT_TYPES) expect(form, `a new endpoint cannot subscribe to ${type}`).toContain(`> ${type}</label>`);
  });

  it("filters jobs by every type and every status", () => {
    expect(optionValues(JOB_FILTERS, "type")).toEqual([...proto.JOB_TYPES]);
    expect(optionValues(JOB_FILTERS, "status")).toEqual([...proto.JOB_STATUSES]);
  });

  it("filters resources by every status", () => {
    expect(optionValues(RESOURCE_FILTERS, "status")).toEqual([...proto.RESOURCE_STATUS.names]);
  });
});
