// The history checker on small hand-made histories: for each rule, one history that passes and one that fails
// (docs/scaling.md, "The checked history").
import { describe, expect, it } from "vitest";
import { check, type AnomalyKind } from "./checker.js";
import type { ListPage, NewOp, Op, Seen } from "./history.js";

/** A history from operations in completion order. */
const history = (...ops: NewOp[]): Op[] => ops.map((op, n) => ({ n, ...op }) as Op);

const seen = (i: number, step: number, steps: number[] = range(step), created = 1000 + i): Seen => ({
  id: `res_${i}`,
  name: `chaos-${i}`,
  step,
  steps,
  created,
});
const range = (step: number) => Array.from({ length: step }, (_, k) => k + 1);

const create = (i: number, invoked: number, completed: number, extra: Partial<NewOp> = {}): NewOp => ({
  type: "write",
  process: "writer-1",
  i,
  step: 0,
  key: `chaos-key-${i}-0`,
  id: `res_${i}`,
  invoked,
  completed,
  outcome: "ok",
  status: 201,
  body: `{"id":"res_${i}"}`,
  seen: seen(i, 0),
  ...(extra as object),
});
const update = (i: number, step: number, invoked: number, completed: number, extra: Partial<NewOp> = {}): NewOp => ({
  type: "write",
  process: "writer-1",
  i,
  step,
  key: `chaos-key-${i}-${step}`,
  id: `res_${i}`,
  invoked,
  completed,
  outcome: "ok",
  status: 200,
  body: `{"id":"res_${i}","step":${step}}`,
  seen: seen(i, step),
  ...(extra as object),
});
const read = (i: number, shown: Seen | null, invoked: number, completed: number, process = "reader-1", final = false): NewOp => ({
  type: "read",
  process,
  i,
  id: `res_${i}`,
  invoked,
  completed,
  ...(shown ? { outcome: "ok", status: 200, seen: shown } : { outcome: "fail", status: 404, absent: true }),
  ...(final ? { final } : {}),
});
const page = (invoked: number, completed: number, items: Seen[], has_more = false): ListPage => ({ invoked, completed, starting_after: null, items, has_more });
const walk = (pages: ListPage[], final = false, outcome: "ok" | "unknown" = "ok"): NewOp => ({
  type: "list",
  process: "reader-2",
  walk: 1,
  limit: 2,
  invoked: pages[0]!.invoked,
  completed: pages.at(-1)!.completed,
  outcome,
  pages,
  ...(final ? { final } : {}),
});
const search = (i: number, items: Seen[], invoked: number, completed: number): NewOp => ({
  type: "search",
  process: "reader-3",
  i,
  query: `name:'chaos-${i}'`,
  invoked,
  completed,
  outcome: "ok",
  status: 200,
  items,
});

/** The kinds found, with their counts, leaving out the zeros. */
function found(ops: Op[]): Partial<Record<AnomalyKind, number>> {
  const verdict = check(ops);
  const kinds = Object.fromEntries(Object.entries(verdict.anomalies).filter(([, n]) => n > 0));
  expect(verdict.ok).toBe(Object.keys(kinds).length === 0);
  return kinds;
}

describe("the history checker", () => {
  it("passes a clean history: writes, reads, a walk, a search and the final state agree", () => {
    const ops = history(
      create(1, 0, 10),
      create(2, 1, 12),
      read(1, seen(1, 0), 13, 14),
      update(1, 1, 15, 20),
      read(1, seen(1, 1), 21, 22),
      walk([page(23, 24, [seen(2, 0), seen(1, 1)])]),
      search(2, [seen(2, 0)], 25, 26),
      read(1, seen(1, 1), 100, 101, "final", true),
      read(2, seen(2, 0), 100, 101, "final", true),
    );
    const verdict = check(ops);
    expect(verdict).toMatchObject({ ok: true, operations: 9, resources: 2 });
    expect(verdict.by_type).toEqual({ "write ok": 3, "read ok": 2, "list ok": 1, "search ok": 1, "read final ok": 2 });
  });

  it("lost-acknowledged-write: an acknowledged update absent from the final state; not when it was never acknowledged", () => {
    expect(found(history(create(1, 0, 1), update(1, 1, 2, 3), read(1, seen(1, 0, []), 50, 51, "final", true)))).toEqual({ "lost-acknowledged-write": 1 });
    expect(found(history(create(1, 0, 1), update(1, 1, 2, 3, { outcome: "unknown", status: 500 }), read(1, seen(1, 0, []), 50, 51, "final", true)))).toEqual(
      {},
    );
    // A create acknowledged and gone.
    expect(found(history(create(1, 0, 1), read(1, null, 50, 51, "final", true)))).toEqual({ "lost-acknowledged-write": 1 });
  });

  it("read-missed-acknowledged-create: a 404 after the create's acknowledgement; not one begun before it", () => {
    expect(found(history(create(1, 0, 10), read(1, null, 11, 12), read(1, seen(1, 0), 50, 51, "final", true)))).toEqual({
      "read-missed-acknowledged-create": 1,
    });
    expect(found(history(read(1, null, 5, 6), create(1, 0, 10), read(1, seen(1, 0), 50, 51, "final", true)))).toEqual({});
  });

  it("stale-read: an older step read after an update's acknowledgement; not while the update was in flight", () => {
    expect(found(history(create(1, 0, 1), update(1, 1, 2, 10), read(1, seen(1, 0), 11, 12), read(1, seen(1, 1), 50, 51, "final", true)))).toEqual({
      "stale-read": 1,
    });
    expect(found(history(create(1, 0, 1), read(1, seen(1, 0), 3, 12), update(1, 1, 2, 10), read(1, seen(1, 1), 50, 51, "final", true)))).toEqual({});
  });

  it("read-of-vanished-write: a read showing an update the final state lacks (a dirty read); not one the final state holds", () => {
    const dirty = seen(1, 1);
    expect(
      found(
        history(
          create(1, 0, 1),
          update(1, 1, 2, 30, { outcome: "unknown", status: 500 }),
          read(1, dirty, 5, 6),
          read(1, seen(1, 0, []), 50, 51, "final", true),
        ),
      ),
    ).toEqual({
      "read-of-vanished-write": 1,
      // The final read, begun after the dirty one, shows an older step too.
      "version-went-back": 1,
    });
    expect(
      found(history(create(1, 0, 1), update(1, 1, 2, 30, { outcome: "unknown", status: 500 }), read(1, dirty, 5, 6), read(1, dirty, 50, 51, "final", true))),
    ).toEqual({});
  });

  it("version-went-back: a later read (another client) shows an older step than an earlier one; not when the reads overlap", () => {
    const writes = [create(1, 0, 1), update(1, 1, 2, 40, { outcome: "unknown", status: 500 })] as const;
    expect(
      found(history(...writes, read(1, seen(1, 1), 5, 6, "reader-1"), read(1, seen(1, 0), 7, 8, "reader-2"), read(1, seen(1, 1), 50, 51, "final", true))),
    ).toEqual({
      "version-went-back": 1,
    });
    expect(
      found(history(...writes, read(1, seen(1, 1), 5, 9, "reader-1"), read(1, seen(1, 0), 7, 8, "reader-2"), read(1, seen(1, 1), 50, 51, "final", true))),
    ).toEqual({});
  });

  it("client-version-went-back: one client sees a resource's step go back", () => {
    const writes = [create(1, 0, 1), update(1, 1, 2, 40, { outcome: "unknown", status: 500 })] as const;
    expect(found(history(...writes, read(1, seen(1, 1), 5, 6), read(1, seen(1, 0), 7, 8), read(1, seen(1, 1), 50, 51, "final", true)))).toEqual({
      "client-version-went-back": 1,
    });
    expect(found(history(...writes, read(1, seen(1, 0), 5, 6), read(1, seen(1, 1), 7, 8), read(1, seen(1, 1), 50, 51, "final", true)))).toEqual({});
  });

  it("update-out-of-order: step 1 shown over s2 (an older update applied after a newer one)", () => {
    const base = [create(1, 0, 1), update(1, 1, 2, 3), update(1, 2, 4, 5)] as const;
    expect(found(history(...base, read(1, seen(1, 1, [1, 2]), 50, 51, "final", true)))).toEqual({ "update-out-of-order": 1 });
    expect(found(history(...base, read(1, seen(1, 2, [1, 2]), 50, 51, "final", true)))).toEqual({});
  });

  it("duplicate-create: two ids with one name", () => {
    const twin = { ...seen(1, 0), id: "res_1b" };
    expect(found(history(create(1, 0, 1), walk([page(2, 3, [twin, seen(1, 0)])], true)))).toEqual({ "duplicate-create": 1 });
    expect(found(history(create(1, 0, 1), walk([page(2, 3, [seen(1, 0)])], true)))).toEqual({});
  });

  it("list-repeat: one id on two pages of a walk", () => {
    const ops = (second: Seen) =>
      history(create(1, 0, 1), create(2, 0, 1), create(3, 0, 1), walk([page(2, 3, [seen(3, 0), seen(2, 0)], true), page(4, 5, [second, seen(1, 0)])]));
    expect(found(ops(seen(2, 0)))).toEqual({ "list-repeat": 1 });
    expect(
      found(history(create(1, 0, 1), create(2, 0, 1), create(3, 0, 1), walk([page(2, 3, [seen(3, 0), seen(2, 0)], true), page(4, 5, [seen(1, 0)])]))),
    ).toEqual({});
  });

  it("list-skip: a walk lacks a resource acknowledged before it began; one created during the walk may be missing", () => {
    expect(found(history(create(1, 0, 1), create(2, 0, 1), walk([page(2, 3, [seen(2, 0)])])))).toEqual({ "list-skip": 1 });
    expect(found(history(create(1, 0, 1), walk([page(2, 3, [])]), create(2, 1, 4)))).toEqual({ "list-skip": 1 });
    expect(found(history(create(1, 0, 1), create(2, 1, 4), walk([page(2, 3, [seen(1, 0)])])))).toEqual({});
    // A walk that did not reach its end is not judged for skips.
    expect(found(history(create(1, 0, 1), create(2, 0, 1), walk([page(2, 3, [seen(2, 0)], true)], false, "unknown")))).toEqual({});
  });

  it("list-out-of-order: an older item before a newer one", () => {
    expect(found(history(create(1, 0, 1), create(2, 0, 1), walk([page(2, 3, [seen(1, 0), seen(2, 0)])])))).toEqual({ "list-out-of-order": 1 });
    expect(found(history(create(1, 0, 1), create(2, 0, 1), walk([page(2, 3, [seen(2, 0), seen(1, 0)])])))).toEqual({});
  });

  it("search-missed-acknowledged-write: a search begun after the create's acknowledgement finds it; one begun before may not", () => {
    expect(found(history(create(1, 0, 10), search(1, [], 11, 12)))).toEqual({ "search-missed-acknowledged-write": 1 });
    expect(found(history(search(1, [], 5, 6), create(1, 0, 10), search(1, [seen(1, 0)], 11, 12)))).toEqual({});
  });

  it("idempotent-answer-differs: a retried key answering another outcome than its first; 409, 429 and 5xx are not outcomes", () => {
    const retried = (second: Partial<NewOp>) =>
      history(update(1, 1, 0, 1, { status: 404, outcome: "fail", body: '{"error":{"code":"resource_missing"}}', seen: undefined }), update(1, 1, 2, 3, second));
    expect(found(retried({}))).toEqual({ "idempotent-answer-differs": 1 });
    expect(found(retried({ status: 404, outcome: "fail", body: '{"error":{"code":"resource_missing"}}', seen: undefined, replayed: true }))).toEqual({});
    expect(found(retried({ status: 409, outcome: "fail", body: '{"error":{"code":"idempotency_key_in_use"}}', seen: undefined }))).toEqual({});
    // Two creates under one key answering two ids.
    expect(found(history(create(1, 0, 1), create(1, 2, 3, { body: '{"id":"res_other"}' })))).toEqual({ "idempotent-answer-differs": 1 });
  });
});
