import { testDatabaseName } from "@rms/test-db";
import { dropDatabase, eventually } from "@rms/test-db/testkit";
import type {} from "@rms/test-db/vitest-setup";
import { MongoClient, type ChangeStreamInsertDocument, type Db } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { clusterTimeNow, clusterTimeOf, readCausally, STREAM_READ_CONCERN } from "./cluster-time.js";
import { ensurePositionIndex, insertPositioned, tenantKey, type PositionCounter, type Tenanted } from "./positioned-insert.js";

// The order a stream resumes in (docs/streams.md, "Order and resume"), proven on the real server: writers that
// insert documents whose time-ordered ids were made earlier (an outbox relayed later, a request log written in a
// batch), several writer processes at once, copies of the same document by two writers; a follower that reads
// `pos > last` at majority sees every document of its tenant once, in order, with no gap, and so does a change stream.

interface Doc extends Tenanted {
  n: number;
  pos?: number;
}

const WAIT = { timeout: 120_000 };
let clients: MongoClient[];
let db: Db;
let name: string;
const uri = () => inject("mongoUri");

beforeAll(async () => {
  name = testDatabaseName("positions");
  // Six writer processes: one client (one connection pool) each, as six relays of cores and workers would be.
  clients = await Promise.all(Array.from({ length: 7 }, () => new MongoClient(uri(), { writeConcern: { w: "majority", j: true } }).connect()));
  db = clients[0]!.db(name);
  await ensurePositionIndex(db.collection("docs"), "tenant_position");
}, WAIT.timeout);
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await dropDatabase(uri(), name);
});

const collectionsOf = (client: MongoClient) => ({
  documents: client.db(name).collection<Doc>("docs"),
  counters: client.db(name).collection<PositionCounter>("counters"),
});
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Time-ordered ids, as the service's are: the time first, so a later id sorts after an earlier one. */
let idCounter = 0;
const newId = () => `${Date.now().toString(36).padStart(9, "0")}_${(idCounter++).toString(36).padStart(6, "0")}`;

describe("positions in commit order", () => {
  it("a follower by id misses a document whose earlier id commits after a later one; a follower by position does not", async () => {
    const { documents, counters } = collectionsOf(clients[0]!);
    const tenant = { account: "acct_order", livemode: false };
    const early = { _id: newId(), ...tenant, n: 1 };
    const late = { _id: newId(), ...tenant, n: 2 };
    expect(early._id < late._id).toBe(true);
    // The later id is written first (its relay was faster), and both followers read it.
    await insertPositioned({ documents, counters }, [late]);
    const byId = await documents.find({ account: tenant.account, _id: { $gt: "" } }, { sort: { _id: 1 } }).toArray();
    const lastId = byId.at(-1)!._id;
    const lastPos = byId.at(-1)!.pos!;
    // Then the earlier one commits.
    await insertPositioned({ documents, counters }, [early]);
    const nextById = await documents.find({ account: tenant.account, _id: { $gt: lastId } }).toArray();
    const nextByPosition = await documents.find({ account: tenant.account, livemode: false, pos: { $gt: lastPos } }).toArray();
    expect(nextById).toEqual([]);
    expect(nextByPosition.map((d) => d._id)).toEqual([early._id]);
  });

  it(
    "under six writers, three tenants, copies of one document by two writers and late inserts, a follower per tenant at majority and a change stream " +
      "see every document once, in order, with no gap",
    async () => {
      const tenants = [0, 1, 2].map((i) => ({ account: `acct_load${i}`, livemode: i === 2 }));
      const watched = collectionsOf(clients[6]!).documents;
      const start = await clusterTimeNow(clients[6]!);
      const stream = watched.watch<Doc, ChangeStreamInsertDocument<Doc>>([{ $match: { operationType: "insert" } }], { startAtOperationTime: start });
      const streamed = new Map<string, { ids: string[]; last: number; gaps: number }>(tenants.map((t) => [tenantKey(t), { ids: [], last: 0, gaps: 0 }]));
      let closing = false;
      const streaming = (async () => {
        for await (const change of stream) {
          const doc = change.fullDocument;
          // The watch may start a little before this test (its start is at most the server's time): other tests' tenants.
          const seen = streamed.get(tenantKey(doc));
          if (!seen) continue;
          if (doc.pos !== seen.last + 1) seen.gaps++;
          seen.last = doc.pos!;
          seen.ids.push(doc._id);
        }
      })().catch((error: unknown) => {
        if (!closing) throw error;
      });

      // Writers: each makes ids now and inserts them 0-30 ms later (an outbox relayed later), in batches of 1-6
      // documents of any tenants; a quarter of the batches also carry documents another writer made (a second relay
      // copying the same outbox), which must keep the one position they get.
      const made: Doc[] = [];
      let writing = true;
      const writer = async (w: number) => {
        const { documents, counters } = collectionsOf(clients[w]!);
        for (let b = 0; b < 60; b++) {
          const batch = Array.from({ length: 1 + Math.floor(Math.random() * 6) }, () => ({ _id: newId(), ...tenants[Math.floor(Math.random() * 3)]!, n: w }));
          made.push(...batch);
          const copies = Math.random() < 0.25 ? made.slice(-20).filter(() => Math.random() < 0.3) : [];
          await pause(Math.random() * 30);
          await insertPositioned({ documents, counters }, [...batch, ...copies]);
        }
      };

      // A follower per tenant: `pos > last` at majority, in a causal session after the change stream's start.
      const follow = async (tenant: (typeof tenants)[number]) => {
        const documents = collectionsOf(clients[6]!).documents;
        const ids: string[] = [];
        let last = 0;
        let gaps = 0;
        const readOnce = () =>
          readCausally(clients[6]!, clusterTimeOf(start), (session) =>
            documents
              .find(
                { account: tenant.account, livemode: tenant.livemode, pos: { $gt: last } },
                { session, readConcern: STREAM_READ_CONCERN, sort: { pos: 1 }, limit: 50 },
              )
              .toArray(),
          );
        for (;;) {
          const stillWriting = writing;
          const page = await readOnce();
          for (const doc of page) {
            if (doc.pos !== last + 1) gaps++;
            last = doc.pos!;
            ids.push(doc._id);
          }
          if (!stillWriting && page.length === 0) return { ids, gaps };
        }
      };
      const followers = tenants.map(follow);
      await Promise.all([0, 1, 2, 3, 4, 5].map(writer));
      writing = false;
      const followed = await Promise.all(followers);

      const { documents, counters } = collectionsOf(clients[0]!);
      for (const [i, tenant] of tenants.entries()) {
        const stored = await documents.find({ account: tenant.account, livemode: tenant.livemode }, { sort: { pos: 1 } }).toArray();
        const madeIds = new Set(made.filter((d) => tenantKey(d) === tenantKey(tenant)).map((d) => d._id));
        // One document per id made, positions 1..n, the counter at n.
        expect(stored.length).toBe(madeIds.size);
        expect(stored.map((d) => d.pos)).toEqual(stored.map((_, k) => k + 1));
        expect((await counters.findOne({ _id: tenantKey(tenant) }))?.pos).toBe(stored.length);
        // The follower: every document once, in position order, never a gap.
        expect(followed[i]!.gaps).toBe(0);
        expect(followed[i]!.ids).toEqual(stored.map((d) => d._id));
        // Ids do not give that order: some later id committed before an earlier one (what a follower by id misses).
        const inversions = stored.filter((d, k) => k > 0 && d._id < stored[k - 1]!._id).length;
        process.stderr.write(`${tenantKey(tenant)}: ${stored.length} documents, ${inversions} committed before a document with a later id\n`);
      }
      // The change stream delivers each tenant's positions in order too (commit order), none twice.
      await eventually(
        () => {
          for (const [i, tenant] of tenants.entries()) expect(streamed.get(tenantKey(tenant))!.ids.length).toBe(followed[i]!.ids.length);
        },
        { timeoutMs: 60_000 },
      );
      closing = true;
      await stream.close();
      await streaming;
      for (const [i, tenant] of tenants.entries()) {
        const seen = streamed.get(tenantKey(tenant))!;
        expect(seen.gaps).toBe(0);
        expect(seen.ids).toEqual(followed[i]!.ids);
      }
    },
    WAIT.timeout,
  );
});
