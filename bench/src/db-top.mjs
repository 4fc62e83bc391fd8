// BENCH_DB_TOP=1: what the database did during a run, by collection (its `top` command: operations and the time they
// held their locks) and by command (`serverStatus` counters), printed to stderr. Counts, unlike times, hold on a
// busy machine: they show a write path's operations per request (the deliveries' lanes per create, for example).
import { MongoClient } from "mongodb";

/** A meter over one run: `stop(name, requests)` prints the run's top collections and commands, per request. */
export async function dbTop(mongoUri) {
  const client = await new MongoClient(mongoUri).connect();
  const admin = client.db("admin");
  const read = async () => ({
    top: (await admin.command({ top: 1 })).totals,
    commands: (await admin.command({ serverStatus: 1 })).metrics.commands,
  });
  const before = await read();
  return {
    async stop(name, requests) {
      const after = await read();
      await client.close();
      const per = (n) => (n / Math.max(1, requests)).toFixed(2);
      const rows = Object.entries(after.top)
        .filter(([collection]) => collection !== "note")
        .map(([collection, now]) => {
          const was = before.top[collection] ?? {};
          const delta = (field, key) => (now[field]?.[key] ?? 0) - (was[field]?.[key] ?? 0);
          return { collection, ms: delta("total", "time") / 1000, ops: delta("total", "count"), writeMs: delta("writeLock", "time") / 1000 };
        })
        .filter((row) => row.ops > 0)
        .sort((a, b) => b.ms - a.ms)
        .slice(0, 12);
      const lines = [`db top, ${name} (${requests} requests): collection, ms holding locks, operations per request (ms of them writing)`];
      for (const row of rows) lines.push(`  ${row.collection} ${Math.round(row.ms)} ms, ${per(row.ops)} per request (${Math.round(row.writeMs)} ms writing)`);
      const counts = Object.entries(after.commands)
        .filter(([, value]) => typeof value?.total !== "undefined")
        .map(([command, value]) => [command, Number(value.total) - Number(before.commands[command]?.total ?? 0)])
        .filter(([, n]) => n > 0)
        .sort((a, b) => b[1] - a[1])
        .slice(0, 10);
      lines.push(`  commands per request: ${counts.map(([command, n]) => `${command} ${per(n)}`).join(", ")}`);
      process.stderr.write(`${lines.join("\n")}\n`);
    },
  };
}
