// The request-log rows (issue 28, item 5): the cost of recording every request (CONTRACT.md section 12) on the GET
// row. The bench's stack records as every stack does (REQUEST_LOGS defaults to on); a second `rms start` on the same
// mongod (a database name of its own) runs with REQUEST_LOGS=off. The same GET is measured on each, in the order
// off, on, on, off with both stacks up during every run; each side is the mean of its two rounds, so a drift of the
// shared machine weighs on both alike. The write cost per logged request is the CPU per request the recording
// side spends beyond the other: the gateway's (capture, redaction, batching) and the database's (the batched inserts
// and their nine list indexes), read from the CPU column.
import { meanOfRounds } from "./load.mjs";
import { getOnTwoStacks } from "./two-stacks.mjs";

export async function requestLogRows({ results, ...context }) {
  const rounds = await getOnTwoStacks({
    ...context,
    name: "unlogged",
    env: { MONGODB_DATABASE: "rms_bench_unlogged", REQUEST_LOGS: "off" },
    order: ["second", "first", "first", "second"],
    labels: { first: "get_request_logs_on", second: "get_request_logs_off" },
  });
  results.get_request_logs_on = meanOfRounds(rounds.first);
  results.get_request_logs_off = meanOfRounds(rounds.second);
  const cost = writeCost(results);
  results.request_log_write_cost = cost;
  context.say(
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
