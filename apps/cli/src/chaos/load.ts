// The request load of the resources phase of `npm run chaos`: `total` creates through the public API, each
// followed by one or two updates once acknowledged, from `concurrency` clients that retry every failed request
// with its own Idempotency-Key.
import type { PublicApi } from "../stack/public-api.js";
import { recordWrite, type History } from "./history.js";
import { sleep } from "./log.js";

export interface LoadOptions {
  total: number;
  concurrency: number;
  /** No new request after this time (ms since the epoch); what is left is counted as unfinished. */
  deadline: number;
  /** Updates of resource `i` after its create is acknowledged. */
  updatesOf: (i: number) => number;
  /** Every attempt is recorded here (history.ts), with its times, arguments and answer. */
  history?: History;
  /** While true, a client that finds nothing left to send creates one more resource (a rolling upgrade is not done yet). */
  more?: () => boolean;
}

export interface LoadOutcomes {
  /** Creates sent: `total`, and the ones `more` asked for. */
  creates: number;
  /** Creates acknowledged (201). */
  ok: number;
  /** Updates acknowledged (200). */
  updated: number;
  /** Failed attempts, each retried later with the same key. */
  retries: number;
  /** Steps not acknowledged by the deadline. */
  gaveUp: number;
  /** The `i` of every acknowledged create (its resource is named `chaos-<i>`). */
  acknowledged: Set<number>;
  /** The id each acknowledged create answered with. */
  acknowledgedIds: Set<string>;
  /** How the failed attempts failed: HTTP status (with the error code for a 5xx), or "network" when no answer came. */
  failures: Record<string, number>;
}

function errorCodeOf(body: string): string {
  try {
    return (JSON.parse(body) as { error?: { code?: string } }).error?.code ?? "no code";
  } catch {
    return "not JSON";
  }
}

/** Step 0 of resource `i` is its create; steps 1.. are its updates, queued once the step before is acknowledged. */
interface Step {
  i: number;
  step: number;
  id?: string;
}

/** Starts the load; `outcomes` grows while it runs (for progress lines), `done` resolves when it ends. */
export function startLoad(api: PublicApi, options: LoadOptions): { outcomes: LoadOutcomes; done: Promise<void> } {
  const outcomes: LoadOutcomes = {
    creates: options.total,
    ok: 0,
    updated: 0,
    retries: 0,
    gaveUp: 0,
    acknowledged: new Set(),
    acknowledgedIds: new Set(),
    failures: {},
  };
  // Work queue: a request that fails goes to the back and is retried later with the same key, so a key locked
  // by a killed gateway (409 until its lock expires) does not stall a client.
  const pending: Step[] = Array.from({ length: options.total }, (_, i) => ({ i, step: 0 }));
  const client = async (_: unknown, c: number): Promise<void> => {
    while ((pending.length > 0 || options.more?.()) && Date.now() < options.deadline) {
      if (pending.length === 0) pending.push({ i: outcomes.creates++, step: 0 });
      const work = pending.shift()!;
      const { i, step } = work;
      // An update carries a changing metadata value; retried after an unknown outcome it may apply twice,
      // which is why the invariants count committed changes from the stored versions, not from the client. Its
      // own key `s<step>` stays after later updates, so the history shows every update applied (checker.ts).
      const invoked = performance.timeOrigin + performance.now();
      const key = `chaos-key-${i}-${step}`;
      let error: unknown;
      const reply = await api
        .request("POST", step === 0 ? "/v1/resources" : `/v1/resources/${work.id}`, {
          form: step === 0 ? `name=chaos-${i}` : `metadata[step]=${step}&metadata[s${step}]=${step}`,
          ...(key ? { idempotencyKey: key } : {}),
        })
        .catch((e: unknown) => {
          error = e;
          return undefined;
        });
      options.history?.add(recordWrite(`writer-${c + 1}`, { i, step, key, ...(work.id ? { id: work.id } : {}) }, invoked, reply, error));
      if (reply && (reply.status === 200 || reply.status === 201)) {
        if (step === 0) {
          outcomes.ok++;
          outcomes.acknowledged.add(i);
          work.id = (JSON.parse(reply.body) as { id: string }).id;
          outcomes.acknowledgedIds.add(work.id);
        } else outcomes.updated++;
        if (step < options.updatesOf(i)) pending.push({ i, step: step + 1, id: work.id });
        continue;
      }
      outcomes.retries++;
      // A 5xx names its code too: a 503 (nothing done), a 500 outcome_unknown (maybe done) and a 500 internal_error (a bug) differ.
      const kind = !reply ? "network" : reply.status >= 500 ? `${reply.status} ${errorCodeOf(reply.body)}` : String(reply.status);
      outcomes.failures[kind] = (outcomes.failures[kind] ?? 0) + 1;
      pending.push(work);
      await sleep(50 + Math.random() * 200);
    }
  };
  const done = Promise.all(Array.from({ length: options.concurrency }, client)).then(() => {
    outcomes.gaveUp = pending.length;
  });
  return { outcomes, done };
}
