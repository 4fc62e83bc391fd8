// How the history records an answer (history.ts): the outcome of each kind of reply, what an object shows, a
// write attempt with its body and replay header, and the JSONL file.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { History, outcomeOf, recordWrite, seenOf } from "./history.js";

const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => ({
  status,
  headers,
  body: typeof body === "string" ? body : JSON.stringify(body),
});

describe("the history's records", () => {
  it("classifies answers: 2xx ok; 4xx and 503 fail (nothing done); 500, other 5xx and no answer unknown", () => {
    expect(outcomeOf(reply(201, {}))).toEqual({ outcome: "ok", status: 201 });
    expect(outcomeOf(reply(404, { error: { code: "resource_missing" } }))).toEqual({ outcome: "fail", status: 404, code: "resource_missing" });
    expect(outcomeOf(reply(503, { error: { code: "service_unavailable" } }))).toEqual({ outcome: "fail", status: 503, code: "service_unavailable" });
    expect(outcomeOf(reply(500, { error: { code: "outcome_unknown" } }))).toEqual({ outcome: "unknown", status: 500, code: "outcome_unknown" });
    expect(outcomeOf(reply(502, "bad gateway"))).toEqual({ outcome: "unknown", status: 502 });
    expect(outcomeOf(undefined, new Error("timeout"))).toEqual({ outcome: "unknown", code: "timeout" });
    expect(outcomeOf(undefined, new Error("socket hang up"))).toEqual({ outcome: "unknown", code: "network" });
  });

  it("reads what an object shows: its step and every update's own key; objects not of the load are left out", () => {
    const object = { id: "res_1", object: "resource", name: "chaos-7", status: "active", metadata: { step: "2", s1: "1", s2: "2", other: "x" }, created: 1700 };
    expect(seenOf(object)).toEqual({ id: "res_1", name: "chaos-7", step: 2, steps: [1, 2], created: 1700 });
    expect(seenOf({ ...object, metadata: {} })).toMatchObject({ step: 0, steps: [] });
    expect(seenOf({ ...object, name: "someone else's" })).toBeUndefined();
    expect(seenOf(null)).toBeUndefined();
  });

  it("records a write attempt with its answer's body and replay header, and the id a create answered with", () => {
    const created = { id: "res_9", object: "resource", name: "chaos-9", status: "active", metadata: {}, created: 1 };
    const op = recordWrite("writer-1", { i: 9, step: 0, key: "k" }, 10, reply(201, created, { "idempotent-replayed": "true" }));
    expect(op).toMatchObject({
      type: "write",
      i: 9,
      step: 0,
      key: "k",
      id: "res_9",
      invoked: 10,
      outcome: "ok",
      status: 201,
      body: JSON.stringify(created),
      replayed: true,
    });
    // A 503 keeps no body (it is no outcome of the request); no answer, none either.
    expect(recordWrite("writer-1", { i: 9, step: 1, key: "k1", id: "res_9" }, 10, reply(503, { error: { code: "service_unavailable" } }))).not.toHaveProperty(
      "body",
    );
    expect(recordWrite("writer-1", { i: 9, step: 1, key: "k1", id: "res_9" }, 10, undefined, new Error("socket hang up"))).toMatchObject({
      outcome: "unknown",
      code: "network",
    });
  });

  it("numbers the operations and writes one JSON object per line", async () => {
    const dir = mkdtempSync(join(tmpdir(), "rms-history-"));
    try {
      const history = new History(join(dir, "h.jsonl"));
      history.add(recordWrite("writer-1", { i: 1, step: 0, key: "a" }, 1, reply(201, { id: "res_1", name: "chaos-1", metadata: {}, created: 1 })));
      history.add({ type: "read", process: "reader-1", i: 1, id: "res_1", invoked: 2, completed: 3, outcome: "fail", status: 404, absent: true });
      await history.close();
      const lines = readFileSync(join(dir, "h.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { n: number; type: string });
      expect(lines.map((l) => [l.n, l.type])).toEqual([
        [0, "write"],
        [1, "read"],
      ]);
      expect(history.ops).toHaveLength(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
