// `node apps/cli/dist/chaos/partition-probe.js`: the partitions of partitions.ts on a bare three-member replica set,
// and what MongoDB answers across one, for partitions.e2e.test.ts (docs/scaling.md, "Partitions"). In the run's
// own network namespace: the primary is cut off from the other members while this process (not cut off) writes
// to it with majority write concern and reads from it; another member is elected; the partition heals and the old
// primary rolls back. Prints one JSON line: what each read saw, who was primary, whether the write survived.
import { startReplicaSet } from "@rms/test-db";
import { MongoClient } from "mongodb";
import { log, sleep } from "./log.js";
import { enterOwnNetwork, prepareNetwork } from "./partitions.js";

const ELECTION_TIMEOUT_MS = 2_000;

if (!(await enterOwnNetwork(true))) process.exit(2);
const network = await prepareNetwork();
const set = await startReplicaSet({ members: 3, electionTimeoutMillis: ELECTION_TIMEOUT_MS, onSpawn: (index, pid) => network.place(`member${index + 1}`, pid) });
const clients: MongoClient[] = [];
const direct = (host: string) => {
  const client = new MongoClient(`mongodb://${host}/?directConnection=true`, { serverSelectionTimeoutMS: 5_000 });
  clients.push(client);
  return client.db("probe").collection<{ _id: string }>("writes");
};
const found = async (reads: ReturnType<typeof direct>, id: string, level: "local" | "majority") => (await reads.findOne({ _id: id }, { readConcern: { level } })) !== null;

try {
  const cutter = await network.cutter(set, []);
  const old = (await set.primary(30_000))!;
  const onOld = direct(old.host);
  await onOld.insertOne({ _id: "before" }, { writeConcern: { w: "majority" } });
  // Every member's connections are marked by their next heartbeat.
  await sleep(3_000);
  await cutter.isolateMember(old.index);
  const cutAt = Date.now();
  log(`probe: member ${old.index + 1}, the primary, cut off from the other members`);
  // A write the old primary takes but cannot replicate: no majority acknowledges it.
  const during = await onOld
    .insertOne({ _id: "during" }, { writeConcern: { w: "majority", wtimeoutMS: 1_000 } })
    .then(() => "acknowledged" as const)
    .catch((error: unknown) => `not acknowledged: ${(error as Error).message.split("\n")[0]}`);
  const readsOnOld = { local: await found(onOld, "during", "local"), majority: await found(onOld, "during", "majority") };
  let next: number | null = null;
  while (next === null && Date.now() - cutAt < 30_000) {
    const primary = await set.primary();
    if (primary && primary !== old) next = primary.index;
    else await sleep(200);
  }
  const electedAfterMs = Date.now() - cutAt;
  const oldStillPrimary = (await old.hello())?.["isWritablePrimary"] === true;
  await cutter.heal();
  log(`probe: healed; member ${next === null ? "none" : next + 1} was elected after ${electedAfterMs} ms`);
  await set.waitHealthy(120_000);
  // Rolled back: the old primary, a secondary now, has caught up with the new term.
  const whole = new MongoClient(set.uri);
  clients.push(whole);
  const survivors = whole.db("probe").collection<{ _id: string }>("writes");
  // While it rolls back, the old primary refuses reads (NotPrimaryOrSecondary): asked again until it answers.
  const onOldAgain = direct(old.host);
  let rolledBack = false;
  for (const until = Date.now() + 60_000; Date.now() < until && !rolledBack; await sleep(500)) {
    rolledBack = await found(onOldAgain, "during", "local").then(
      (present) => !present,
      () => false,
    );
  }
  const after = { before: await found(survivors, "before", "majority"), during: await found(survivors, "during", "majority") };
  process.stdout.write(
    `${JSON.stringify({ old_primary: old.index + 1, during, reads_on_old_primary: readsOnOld, next_primary: next === null ? null : next + 1, elected_after_ms: electedAfterMs, old_still_primary_after_election: oldStillPrimary, rolled_back_on_old_primary: rolledBack, after_heal: after })}\n`,
  );
} finally {
  for (const client of clients) await client.close().catch(() => undefined);
  await set.stop();
  await network.close();
}
