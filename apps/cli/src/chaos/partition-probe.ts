// `node apps/cli/dist/chaos/partition-probe.js`: the partitions of partitions.ts on a bare three-member replica set,
// and what MongoDB answers across one, for partitions.e2e.test.ts (docs/scaling.md, "Partitions"). In the run's
// own network namespace: the primary is cut off from the other members while this process (not cut off) writes
// to it with majority write concern and reads from it; another member is elected; the partition heals and the old
// primary rolls back; then another process (as a core would be) is cut off from every member and healed. Prints
// one JSON line: what each read saw, who was primary, whether the write survived, how the process's pings went.
import { spawn } from "node:child_process";
import { startReplicaSet } from "@rms/test-db";
import { MongoClient } from "mongodb";
import { log, sleep } from "./log.js";
import { enterOwnNetwork, prepareNetwork } from "./partitions.js";

const ELECTION_TIMEOUT_MS = 2_000;

if (!(await enterOwnNetwork(true))) process.exit(2);
const network = await prepareNetwork();
const set = await startReplicaSet({
  members: 3,
  electionTimeoutMillis: ELECTION_TIMEOUT_MS,
  onSpawn: (index, pid) => network.place(`member${index + 1}`, pid),
});
const clients: MongoClient[] = [];
const direct = (host: string) => {
  const client = new MongoClient(`mongodb://${host}/?directConnection=true`, { serverSelectionTimeoutMS: 5_000 });
  clients.push(client);
  return client.db("probe").collection<{ _id: string }>("writes");
};
const found = async (reads: ReturnType<typeof direct>, id: string, level: "local" | "majority") =>
  (await reads.findOne({ _id: id }, { readConcern: { level } })) !== null;

/**
 * Another process (in a cgroup of its own, "client", like a core) that pings the set every 200 ms and prints one
 * line per ping, `ok <ms>` or `fail <ms>` (when it ended); `between` counts them by those times.
 */
function startPinger(uri: string) {
  const script = `import { MongoClient } from "mongodb";
const client = new MongoClient(process.argv[1], { serverSelectionTimeoutMS: 1000, connectTimeoutMS: 1000, socketTimeoutMS: 1000 });
for (;;) {
  const ok = await client.db("admin").command({ ping: 1 }).then(() => true, () => false);
  process.stdout.write((ok ? "ok " : "fail ") + Date.now() + "\\n");
  await new Promise((r) => setTimeout(r, 200));
}`;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script, uri], {
    stdio: ["ignore", "pipe", "ignore"],
    cwd: new URL("../..", import.meta.url).pathname,
  });
  if (child.pid !== undefined) network.place("client", child.pid);
  const lines: string[] = [];
  let buffered = "";
  child.stdout.on("data", (d: Buffer) => {
    buffered += d.toString();
    const parts = buffered.split("\n");
    buffered = parts.pop()!;
    lines.push(...parts);
  });
  return {
    between(from: number, to: number) {
      const within = lines.map((l) => l.split(" ")).filter(([, at]) => Number(at) >= from && Number(at) < to);
      return { ok: within.filter(([what]) => what === "ok").length, fail: within.filter(([what]) => what === "fail").length };
    },
    stop: () => child.kill("SIGKILL"),
  };
}

try {
  const pinger = startPinger(set.uri);
  const cutter = await network.cutter(set, ["client"]);
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
  // The other kind: one process cut off from every member, then healed.
  await sleep(2_000);
  const clientCutAt = Date.now();
  await cutter.isolateFromDatabase("client");
  log("probe: the client process cut off from every member");
  await sleep(6_000);
  const clientHealedAt = Date.now();
  await cutter.heal();
  await sleep(6_000);
  pinger.stop();
  // A ping under way when the cut began may still end well within its first second.
  const client = {
    pings_before: pinger.between(clientCutAt - 2_000, clientCutAt),
    pings_while_cut: pinger.between(clientCutAt + 1_000, clientHealedAt),
    pings_after_heal: pinger.between(clientHealedAt, Date.now()),
  };
  process.stdout.write(
    `${JSON.stringify({
      old_primary: old.index + 1,
      during,
      reads_on_old_primary: readsOnOld,
      next_primary: next === null ? null : next + 1,
      elected_after_ms: electedAfterMs,
      old_still_primary_after_election: oldStillPrimary,
      rolled_back_on_old_primary: rolledBack,
      after_heal: after,
      client,
    })}\n`,
  );
} finally {
  for (const client of clients) await client.close().catch(() => undefined);
  await set.stop();
  await network.close();
}
