import type { IncomingMessage } from "node:http";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { jobParamsOf } from "../routes/jobs/params.js";
import { JOB_BODY_PARAMETER_LIMIT } from "../routes/jobs/create.js";
import { BODY_LIMIT_BYTES, FORM_BODY_PARAMETER_LIMIT, bodyParams, parseForm, parseJson } from "./body.js";

// What one request's body may cost the gateway's CPU (issue 20, finding 7; docs/decisions.md, "Jobs"). A form
// costs 5-25 microseconds per parameter to decode, JSON about 1: a form body holds at most 2,000 parameters (1,000 on
// most operations); only JSON reaches an import's 250,000. Figures are printed (CPU time, the least of 5 runs), never
// asserted.

function request(contentType: string, body: string): IncomingMessage {
  return Object.assign(Readable.from([Buffer.from(body)]), {
    headers: { "content-type": contentType, "content-length": String(Buffer.byteLength(body)) },
  }) as unknown as IncomingMessage;
}

/** CPU milliseconds of `run`, the least of `runs`. */
function cpuMs(run: () => unknown, runs = 5): number {
  let least = Number.POSITIVE_INFINITY;
  for (let i = 0; i < runs; i++) {
    const started = process.cpuUsage();
    try {
      run();
    } catch {
      // A refusal costs too: it is measured the same way.
    }
    const used = process.cpuUsage(started);
    least = Math.min(least, (used.user + used.system) / 1000);
  }
  return least;
}

const item = (i: number) => [
  `params[items][${i}][name]=item-${String(i).padStart(5, "0")}`,
  `params[items][${i}][status]=active`,
  `params[items][${i}][metadata][plan]=pro`,
];
/** `type` and whole items, as many as fit in `bytes`. */
function importForm(bytes: number): { text: string; parameters: number } {
  const parts = ["type=resources.import"];
  let size = parts[0]!.length;
  for (let i = 0; ; i++) {
    const next = item(i);
    const added = next.join("&").length + 1;
    if (size + added > bytes) break;
    parts.push(...next);
    size += added;
  }
  return { text: parts.join("&"), parameters: parts.length };
}

describe("the cost of a request body", () => {
  it("a form at the ceiling, a form over it, and a JSON import of 10,000 items: figures printed", async () => {
    const whole = importForm(BODY_LIMIT_BYTES);
    const items = whole.text.split("&").slice(0, FORM_BODY_PARAMETER_LIMIT).join("&");
    // The costliest shape per parameter: distinct keys nested 5 deep.
    const deep = Array.from({ length: FORM_BODY_PARAMETER_LIMIT }, (_, i) => `a[b${i}][c][d][e]=x`).join("&");
    const json = JSON.stringify({
      type: "resources.import",
      params: { items: Array.from({ length: 10_000 }, (_, i) => ({ name: `item-${i}`, status: "active", metadata: { plan: "pro" } })) },
    });

    const figures = {
      formItemsAtCeiling: cpuMs(() => jobParamsOf("resources.import", parseForm(items, FORM_BODY_PARAMETER_LIMIT)["params"])),
      formDeepAtCeiling: cpuMs(() => parseForm(deep, FORM_BODY_PARAMETER_LIMIT)),
      formOverCeilingRefused: cpuMs(() => parseForm(whole.text, FORM_BODY_PARAMETER_LIMIT)),
      json10kItems: cpuMs(() => jobParamsOf("resources.import", parseJson(json, JOB_BODY_PARAMETER_LIMIT)["params"])),
    };
    console.log(
      `form import at the ceiling (${FORM_BODY_PARAMETER_LIMIT} parameters, ${items.length} B): ${figures.formItemsAtCeiling.toFixed(1)} ms; ` +
        `the costliest form shape at the ceiling (5 levels deep): ${figures.formDeepAtCeiling.toFixed(1)} ms; ` +
        `a 1 MiB form import (${whole.parameters} parameters) refused: ${figures.formOverCeilingRefused.toFixed(2)} ms; ` +
        `JSON import of 10,000 items (${json.length} B, decode and shape check): ${figures.json10kItems.toFixed(1)} ms`,
    );
    expect(Object.values(figures).every(Number.isFinite)).toBe(true);
  });

  it("refuses a form body over 2,000 parameters with 400 parameter_invalid naming the limit and JSON's, and takes the same import as JSON", async () => {
    const form = importForm(BODY_LIMIT_BYTES).text;
    await expect(bodyParams(request("application/x-www-form-urlencoded", form), JOB_BODY_PARAMETER_LIMIT)).rejects.toMatchObject({
      status: 400,
      code: "parameter_invalid",
      message:
        `Too many parameters for a form-encoded body: at most ${FORM_BODY_PARAMETER_LIMIT}. This request takes up to ` +
        `${JOB_BODY_PARAMETER_LIMIT} parameters as JSON: send it with Content-Type: application/json.`,
    });
    const json = JSON.stringify({
      type: "resources.import",
      params: { items: Array.from({ length: 10_000 }, (_, i) => ({ name: `item-${i}`, metadata: { plan: "pro" } })) },
    });
    const params = await bodyParams(request("application/json", json), JOB_BODY_PARAMETER_LIMIT);
    expect((params["params"] as { items: unknown[] }).items).toHaveLength(10_000);
    // At the ceiling a form is taken.
    const ceiling = form.split("&").slice(0, FORM_BODY_PARAMETER_LIMIT).join("&");
    expect(Object.keys(await bodyParams(request("application/x-www-form-urlencoded", ceiling), JOB_BODY_PARAMETER_LIMIT))).toEqual(["type", "params"]);
  });
});
