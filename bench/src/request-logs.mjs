// The request-log rows (issue 28, item 5): the cost of recording every request (CONTRACT.md section 12) on the GET
// row. The bench's stack records as every stack does (REQUEST_LOGS defaults to on); a second `rms start` on the same
// mongod (a database name of its own) runs with REQUEST_LOGS=off. The same GET is measured on each, in the order
// off, on, on, off with both stacks up during every run; each side is the mean of its two rounds, so a drift of the
// shared machine weighs on both alike. The write cost per logged request is the CPU per request the recording
// side spends beyond the other: the gateway's (capture, redaction, batching) and the database's (the batched inserts
// and their nine list indexes), read from the CPU column.
import { readFileSync } from "node:fs";
import { httpsJson, meanOfRounds, runner } from "./load.mjs";
import { startStack } from "./stack.mjs";

export async function requestLogRows({ results, stack, root, work, ports, own, connections, duration, warmup, ca, headers, resourceId, say }) {
  const quiet = await startStack({
    root,
    work,
    ports,
    own,
    say,
    name: "unlogged",
    mongoUri: stack.mongoUri,
    env: { MONGODB_DATABASE: "rms_bench_unlogged", REQUEST_LOGS: "off" },
  });
  try {
    const quietCa = readFileSync(quiet.certFile);
    const quietUrl = `https://127.0.0.1:${ports.httpsPort}`;
    const quietHeaders = { authorization: `Bearer ${quiet.key}` };
    const created = await httpsJson(
      "POST",
      `${quietUrl}/v1/resources`,
      quietCa,
      { ...quietHeaders, "content-type": "application/json" },
      JSON.stringify({ name: "bench", metadata: { plan: "pro" } }),
    );
    const rounds = {};
    const on = await runner({ results: rounds, connections, duration, warmup, ca, say });
    const off = await runner({ results: rounds, connections, duration, warmup, ca: quietCa, say });
    const sides = { get_request_logs_on: [], get_request_logs_off: [] };
    for (const side of ["off", "on", "on", "off"]) {
      const name = `get_request_logs_${side}`;
      if (side === "on") await on.http(name, `https://127.0.0.1:${stack.httpsPort}/v1/resources/${resourceId}`, { headers }, stack.pids());
      // The second stack runs on the first one's mongod: its database column is that server's CPU too.
      else await off.http(name, `${quietUrl}/v1/resources/${created.id}`, { headers: quietHeaders }, { ...quiet.pids(), database: stack.pids().database });
      sides[name].push(rounds[name]);
    }
    for (const [name, both] of Object.entries(sides)) results[name] = meanOfRounds(both);
  } finally {
    quiet.admin.close();
    quiet.coreResources.close();
    await stopStack(quiet.process);
  }
  const cost = writeCost(results);
  results.request_log_write_cost = cost;
  say(
    `request logs: GET ${Math.round(results.get_request_logs_on.rps)} req/s recorded vs ${Math.round(results.get_request_logs_off.rps)} not (${(results.get_request_logs_on.rps / results.get_request_logs_off.rps).toFixed(3)}); per logged request gateway +${cost.gateway_ms.toFixed(3)} ms, database +${cost.database_ms.toFixed(3)} ms CPU`,
  );
}

/** CPU ms per request of the recording side beyond the other, for the gateway and the database. */
export function writeCost(results) {
  const on = results.get_request_logs_on.cpu_ms_per_request ?? {};
  const off = results.get_request_logs_off.cpu_ms_per_request ?? {};
  const delta = (p) => (on[p] ?? Number.NaN) - (off[p] ?? Number.NaN);
  return { gateway_ms: delta("gateway"), database_ms: delta("database"), core_ms: delta("core") };
}

async function stopStack(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  await new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      resolve();
    }, 15_000);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
