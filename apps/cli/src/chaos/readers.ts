// The readers of `npm run chaos`'s resources phase: while the load writes (load.ts), `readers` clients read what
// it made, each operation once (no retry, whatever the answer, recorded in the history): a resource by id, a
// search for one by name, or a walk of the whole list page by page (a page is retried while the stack cannot
// answer, as a client walking a list would). After the run heals, the final reads: one walk of the list and a read
// of every resource, retried until answered, which give the checker the final state.
import type { PublicApi } from "../stack/public-api.js";
import { type History, type ListPage, now, outcomeOf, type Seen, seenOf } from "./history.js";
import { sleep } from "./log.js";

const LIST_LIMIT = 100;
/** A page of a walk is retried this long while the stack cannot answer it. */
const PAGE_RETRY_MS = 60_000;

/** The load's resources known so far (`i` to id), from the acknowledged creates and what was read. */
function knownResources(history: History): () => [number, string][] {
  const known = new Map<number, string>();
  let scanned = 0;
  return () => {
    for (; scanned < history.ops.length; scanned++) {
      const op = history.ops[scanned]!;
      if (op.type === "write" && op.step === 0 && op.outcome === "ok" && op.id) known.set(op.i, op.id);
    }
    return [...known];
  };
}

/** One GET of a resource, recorded. */
async function readOne(api: PublicApi, history: History, process: string, i: number, id: string, final = false): Promise<"answered" | "no answer"> {
  const invoked = now();
  let error: unknown;
  const reply = await api.request("GET", `/v1/resources/${id}`).catch((e: unknown) => {
    error = e;
    return undefined;
  });
  const outcome = outcomeOf(reply, error);
  const seen = outcome.outcome === "ok" ? seenOf(JSON.parse(reply!.body)) : undefined;
  history.add({
    type: "read",
    process,
    i,
    id,
    invoked,
    completed: now(),
    ...outcome,
    ...(seen ? { seen } : {}),
    ...(reply?.status === 404 ? { absent: true } : {}),
    ...(final ? { final } : {}),
  });
  return reply && (reply.status === 200 || reply.status === 404) ? "answered" : "no answer";
}

/** One search for `chaos-<i>` by name, recorded. */
async function searchOne(api: PublicApi, history: History, process: string, i: number): Promise<void> {
  const query = `name:'chaos-${i}'`;
  const invoked = now();
  let error: unknown;
  const reply = await api.request("GET", `/v1/resources/search?query=${encodeURIComponent(query)}&limit=10`).catch((e: unknown) => {
    error = e;
    return undefined;
  });
  const outcome = outcomeOf(reply, error);
  const items = outcome.outcome === "ok" ? ((JSON.parse(reply!.body) as { data: unknown[] }).data.map(seenOf).filter(Boolean) as Seen[]) : undefined;
  history.add({ type: "search", process, i, query, invoked, completed: now(), ...outcome, ...(items ? { items } : {}) });
}

let walks = 0;

/** A walk of the whole list with `starting_after`, recorded as one operation with its pages. */
async function walkList(api: PublicApi, history: History, process: string, final = false): Promise<boolean> {
  const walk = ++walks;
  const pages: ListPage[] = [];
  const invoked = now();
  let last: ReturnType<typeof outcomeOf> = { outcome: "ok" };
  for (let after: string | null = null; ; ) {
    const deadline = Date.now() + PAGE_RETRY_MS;
    let page: ListPage | undefined;
    while (!page) {
      const pageInvoked = now();
      let error: unknown;
      const reply = await api.request("GET", `/v1/resources?limit=${LIST_LIMIT}${after ? `&starting_after=${after}` : ""}`).catch((e: unknown) => {
        error = e;
        return undefined;
      });
      last = outcomeOf(reply, error);
      if (last.outcome === "ok") {
        const body = JSON.parse(reply!.body) as { data: unknown[]; has_more: boolean };
        page = {
          invoked: pageInvoked,
          completed: now(),
          starting_after: after,
          items: body.data.map(seenOf).filter(Boolean) as Seen[],
          has_more: body.has_more,
        };
      } else if (Date.now() > deadline || (reply && reply.status < 500 && reply.status !== 409 && reply.status !== 429)) {
        history.add({ type: "list", process, walk, limit: LIST_LIMIT, pages, invoked, completed: now(), ...last, ...(final ? { final } : {}) });
        return false;
      } else await sleep(300);
    }
    pages.push(page);
    const next = page.items.at(-1)?.id;
    if (!page.has_more || !next) break;
    after = next;
  }
  history.add({ type: "list", process, walk, limit: LIST_LIMIT, pages, invoked, completed: now(), outcome: "ok", ...(final ? { final } : {}) });
  return true;
}

export interface Readers {
  /** Operations done so far. */
  readonly done: () => number;
  /** Ends the readers (after the operation under way of each). */
  stop(): Promise<void>;
}

/**
 * `readers` clients, each doing one operation after another with a short pause: a read by id (60%), a search by
 * name (25%) or a whole list walk (15%), of resources whose creates were acknowledged (any of them, and more
 * often the newest, which are being updated).
 */
export function startReaders(api: PublicApi, history: History, readers: number): Readers {
  const known = knownResources(history);
  let running = true;
  let done = 0;
  const reader = async (_: unknown, r: number) => {
    const process = `reader-${r + 1}`;
    while (running) {
      const resources = known();
      if (resources.length === 0) {
        await sleep(200);
        continue;
      }
      // Half the picks among the newest 32: those still being updated.
      const pick =
        Math.random() < 0.5 ? resources.length - 1 - Math.floor(Math.random() * Math.min(32, resources.length)) : Math.floor(Math.random() * resources.length);
      const [i, id] = resources[pick]!;
      const dice = Math.random();
      if (dice < 0.6) await readOne(api, history, process, i, id);
      else if (dice < 0.85) await searchOne(api, history, process, i);
      else await walkList(api, history, process);
      done++;
      await sleep(20 + Math.random() * 80);
    }
  };
  const loops = Promise.all(Array.from({ length: readers }, reader));
  return {
    done: () => done,
    async stop() {
      running = false;
      await loops;
    },
  };
}

/** The final reads, once the run has healed: a list walk, then every resource the walk or the load knows, each retried until answered. */
export async function finalReads(api: PublicApi, history: History): Promise<{ walked: boolean; read: number }> {
  let walked = false;
  for (let attempt = 0; attempt < 5 && !walked; attempt++) walked = await walkList(api, history, "final", true);
  const ids = new Map(knownResources(history)());
  const lastWalk = history.ops.findLast((op) => op.type === "list" && op.final && op.outcome === "ok");
  if (lastWalk?.type === "list") for (const page of lastWalk.pages) for (const item of page.items) ids.set(Number(item.name.slice(6)), item.id);
  let read = 0;
  for (const [i, id] of ids) {
    for (let attempt = 0; attempt < 20; attempt++) {
      if ((await readOne(api, history, "final", i, id, true)) === "answered") break;
      await sleep(500);
    }
    read++;
  }
  return { walked, read };
}
