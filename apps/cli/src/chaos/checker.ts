// The checker of `npm run chaos`'s history (history.ts): pure, over the recorded operations alone, with the rules
// of docs/scaling.md ("The checked history"). The model: each resource `chaos-<i>` is written by one client in
// order (its create, then updates k = 1, 2, ... each sent once the one before is acknowledged, each retried with
// its own Idempotency-Key); update k sets `metadata.step` to k and adds the key `metadata.s<k>`, so an answer
// shows both the last update applied (`step`) and every update applied (`steps`). Every answer that shows a
// resource (a write's 2xx, a read, a list page, a search) is an observation of it over its operation's interval.
import { indexOf, type ListOp, type Op, type ReadOp, type SearchOp, type Seen, type WriteOp } from "./history.js";

/** The kinds of anomaly; the contract forbids every one (CONTRACT.md section 10, "Partitions and histories"). */
export const ANOMALY_KINDS = [
  // An acknowledged create or update missing from the final state (after the run healed).
  "lost-acknowledged-write",
  // A read begun after a create was acknowledged answered 404 (a GET or an update of that id).
  "read-missed-acknowledged-create",
  // A read begun after update k was acknowledged showed an older step.
  "stale-read",
  // A read showed a write (a create or an update) that the final state does not hold: it was rolled back or never committed.
  "read-of-vanished-write",
  // A read showed an older step than one a read completed before it began (a different client) showed.
  "version-went-back",
  // The same, both reads by one client.
  "client-version-went-back",
  // An object whose `metadata.step` is older than one of its own `s<k>` keys: an older update applied over a newer one.
  "update-out-of-order",
  // Two resources with one name: a create applied twice.
  "duplicate-create",
  // A list walk returned one id twice.
  "list-repeat",
  // A list walk that reached its end lacked a resource acknowledged before it began (the load deletes none).
  "list-skip",
  // A list walk's items not most recent first.
  "list-out-of-order",
  // A search begun after a create was acknowledged did not find it.
  "search-missed-acknowledged-write",
  // One Idempotency-Key answered (2xx or an executed 4xx) with two different statuses or bodies.
  "idempotent-answer-differs",
] as const;

export type AnomalyKind = (typeof ANOMALY_KINDS)[number];

export interface Anomaly {
  kind: AnomalyKind;
  /** The resource's index, when the anomaly is about one. */
  i?: number;
  /** The operations (their `n`) that show it. */
  ops: number[];
  detail: string;
}

export interface Verdict {
  ok: boolean;
  operations: number;
  /** Operations by type and outcome, e.g. `write ok`, `read unknown`. */
  by_type: Record<string, number>;
  observations: number;
  resources: number;
  anomalies: Record<AnomalyKind, number>;
  /** Up to `examples` anomalies of each kind. */
  examples: Anomaly[];
}

/** One observation of resource `i`: what an answer showed, over its operation's interval. */
interface Observation {
  op: number;
  process: string;
  invoked: number;
  completed: number;
  /** undefined: the answer said the resource does not exist (404). */
  seen?: Seen;
  final: boolean;
  /** A write's own answer: judged by the acknowledgement rules, not as an earlier read of the version rule. */
  write?: boolean;
}

interface ResourceFacts {
  i: number;
  /** Earliest acknowledgement (client completion time) of each step (0: the create). */
  acked: Map<number, { at: number; op: number }>;
  observations: Observation[];
  ids: Set<string>;
  /** The final state: the object after the run healed, null when the final reads found none, undefined when they could not tell. */
  final?: { seen: Seen | null; op: number };
}

export function check(ops: readonly Op[], options: { examples?: number } = {}): Verdict {
  const perExample = options.examples ?? 5;
  const anomalies: Anomaly[] = [];
  const add = (a: Anomaly) => anomalies.push(a);
  const resources = new Map<number, ResourceFacts>();
  const facts = (i: number): ResourceFacts => {
    let f = resources.get(i);
    if (!f) {
      f = { i, acked: new Map(), observations: [], ids: new Set() };
      resources.set(i, f);
    }
    return f;
  };
  const observe = (seen: Seen, op: Op, interval: { invoked: number; completed: number }, final = false) => {
    const f = facts(indexOf(seen.name));
    f.ids.add(seen.id);
    f.observations.push({
      op: op.n,
      process: op.process,
      invoked: interval.invoked,
      completed: interval.completed,
      seen,
      final,
      ...(op.type === "write" ? { write: true } : {}),
    });
  };
  const by_type: Record<string, number> = {};

  const writes: WriteOp[] = [];
  const lists: ListOp[] = [];
  const searches: SearchOp[] = [];
  const finalReads: ReadOp[] = [];
  for (const op of ops) {
    const label = `${op.type}${"final" in op && op.final ? " final" : ""} ${op.outcome}`;
    by_type[label] = (by_type[label] ?? 0) + 1;
    switch (op.type) {
      case "write": {
        writes.push(op);
        const f = facts(op.i);
        if (op.outcome === "ok") {
          const acked = f.acked.get(op.step);
          if (!acked || op.completed < acked.at) f.acked.set(op.step, { at: op.completed, op: op.n });
          if (op.seen) observe(op.seen, op, op);
        } else if (op.status === 404 && op.step > 0) {
          f.observations.push({ op: op.n, process: op.process, invoked: op.invoked, completed: op.completed, final: false });
        }
        break;
      }
      case "read":
        if (op.final) finalReads.push(op);
        if (op.outcome === "ok" && op.seen) observe(op.seen, op, op, op.final);
        else if (op.absent)
          facts(op.i).observations.push({ op: op.n, process: op.process, invoked: op.invoked, completed: op.completed, final: op.final === true });
        break;
      case "list":
        lists.push(op);
        for (const page of op.pages) for (const seen of page.items) observe(seen, op, page, op.final);
        break;
      case "search":
        searches.push(op);
        if (op.outcome === "ok") for (const seen of op.items ?? []) observe(seen, op, op);
        break;
    }
  }

  // The final state: a final list walk that reached its end says which resources exist and as what; a final
  // read, more direct, wins for its resource.
  for (const list of lists.filter((l) => l.final && l.outcome === "ok")) {
    for (const f of resources.values()) f.final = { seen: null, op: list.n };
    for (const page of list.pages) for (const seen of page.items) facts(indexOf(seen.name)).final = { seen, op: list.n };
  }
  for (const read of finalReads) {
    if (read.outcome === "ok" && read.seen) facts(read.i).final = { seen: read.seen, op: read.n };
    else if (read.absent) facts(read.i).final = { seen: null, op: read.n };
  }

  for (const f of resources.values()) {
    const { i } = f;
    const created = f.acked.get(0);
    // Two ids for one name: a create applied twice.
    if (f.ids.size > 1) add({ kind: "duplicate-create", i, ops: f.observations.slice(0, 2).map((o) => o.op), detail: `ids ${[...f.ids].join(", ")}` });
    // Lost acknowledged writes: the final state lacks them.
    if (f.final) {
      const fin = f.final.seen;
      if (!fin) {
        if (created)
          add({
            kind: "lost-acknowledged-write",
            i,
            ops: [created.op, f.final.op],
            detail: "the create was acknowledged; the final state has no such resource",
          });
      } else {
        for (const [step, ack] of f.acked) {
          if (step > 0 && !fin.steps.includes(step))
            add({ kind: "lost-acknowledged-write", i, ops: [ack.op, f.final.op], detail: `update ${step} was acknowledged; the final state lacks s${step}` });
        }
      }
    }
    const sorted = [...f.observations].sort((a, b) => a.completed - b.completed);
    for (const o of sorted) {
      const seen = o.seen;
      if (!seen) {
        // A 404 after the create's acknowledgement (the final one is judged above).
        if (!o.final && created && created.at < o.invoked)
          add({
            kind: "read-missed-acknowledged-create",
            i,
            ops: [created.op, o.op],
            detail: "404 for a resource whose create was acknowledged before the read began",
          });
        continue;
      }
      // An older update applied over a newer one.
      const newest = seen.steps.at(-1) ?? 0;
      if (seen.step < newest) add({ kind: "update-out-of-order", i, ops: [o.op], detail: `step ${seen.step} shown with s${newest} present` });
      // Stale: an update acknowledged before the read began is not shown (in the final state: lost, above).
      for (const [step, ack] of o.final ? [] : f.acked) {
        if (step > 0 && ack.at < o.invoked && seen.step < step) {
          add({ kind: "stale-read", i, ops: [ack.op, o.op], detail: `step ${seen.step} read after update ${step} was acknowledged` });
          break;
        }
      }
      // A read of a write the final state does not hold (a write's own answer: lost, above, if it was acknowledged).
      if (f.final && !o.final && !o.write) {
        const fin = f.final.seen;
        if (!fin) add({ kind: "read-of-vanished-write", i, ops: [o.op, f.final.op], detail: "a resource read that the final state does not have" });
        else {
          const vanished = seen.steps.filter((s) => !fin.steps.includes(s));
          if (vanished.length > 0)
            add({ kind: "read-of-vanished-write", i, ops: [o.op, f.final.op], detail: `read showed s${vanished.join(", s")}, absent from the final state` });
        }
      }
    }
    // Versions never go back in real time: an observation begun after a read completed shows at least its step
    // (after a write's acknowledgement, the stale-read rule judges).
    for (const later of sorted) {
      if (!later.seen) continue;
      let worst: Observation | undefined;
      for (const earlier of sorted) {
        if (earlier.completed >= later.invoked) break;
        if (earlier.seen && !earlier.write && earlier.seen.step > later.seen.step && (!worst || earlier.seen.step > worst.seen!.step)) worst = earlier;
      }
      if (worst) {
        const same = worst.process === later.process;
        add({
          kind: same ? "client-version-went-back" : "version-went-back",
          i,
          ops: [worst.op, later.op],
          detail: `step ${worst.seen!.step} (${worst.process}) then step ${later.seen.step} (${later.process})`,
        });
      }
    }
  }

  // List walks: no repeats, no skips of what existed for the whole walk, most recent first.
  for (const list of lists) {
    const seenIds = new Set<string>();
    let previous: Seen | undefined;
    for (const page of list.pages) {
      for (const item of page.items) {
        if (seenIds.has(item.id)) add({ kind: "list-repeat", i: indexOf(item.name), ops: [list.n], detail: `${item.id} twice in walk ${list.walk}` });
        seenIds.add(item.id);
        if (previous && item.created > previous.created)
          add({
            kind: "list-out-of-order",
            i: indexOf(item.name),
            ops: [list.n],
            detail: `${item.id} (created ${item.created}) after ${previous.id} (created ${previous.created})`,
          });
        previous = item;
      }
    }
    if (list.outcome !== "ok") continue;
    for (const f of resources.values()) {
      const created = f.acked.get(0);
      if (!created || created.at >= list.invoked) continue;
      if (![...f.ids].some((id) => seenIds.has(id)))
        add({ kind: "list-skip", i: f.i, ops: [created.op, list.n], detail: `chaos-${f.i}, acknowledged before walk ${list.walk} began, not in it` });
    }
  }

  // Search: read-your-writes for a create acknowledged before the search began.
  for (const search of searches) {
    if (search.outcome !== "ok") continue;
    const created = resources.get(search.i)?.acked.get(0);
    if (created && created.at < search.invoked && !(search.items ?? []).some((s) => s.name === `chaos-${search.i}`)) {
      add({ kind: "search-missed-acknowledged-write", i: search.i, ops: [created.op, search.n], detail: `${search.query} found nothing` });
    }
  }

  // Idempotent retries: every answer that came from executing the request (2xx, a 4xx but 409 and 429) is the first one.
  const answers = new Map<string, WriteOp[]>();
  for (const w of writes) {
    if (!w.key || w.status === undefined || w.body === undefined || w.status === 409 || w.status === 429 || w.status >= 500) continue;
    answers.set(w.key, [...(answers.get(w.key) ?? []), w]);
  }
  for (const [key, list] of answers) {
    const first = list[0]!;
    const other = list.find((w) => w.status !== first.status || w.body !== first.body);
    if (other)
      add({
        kind: "idempotent-answer-differs",
        i: first.i,
        ops: [first.n, other.n],
        detail: `${key}: ${first.status} then ${other.status}${other.status === first.status ? " with another body" : ""}`,
      });
  }

  const counts = Object.fromEntries(ANOMALY_KINDS.map((k) => [k, 0])) as Record<AnomalyKind, number>;
  const examples: Anomaly[] = [];
  for (const a of anomalies) if (counts[a.kind]++ < perExample) examples.push(a);
  return {
    ok: anomalies.length === 0,
    operations: ops.length,
    by_type,
    observations: [...resources.values()].reduce((n, f) => n + f.observations.length, 0),
    resources: resources.size,
    anomalies: counts,
    examples,
  };
}
