// The stream rows (issue 43, CONTRACT.md section 14; docs/streams.md): what an open stream costs a gateway, and how
// soon an event reaches the streams.
//   streams_open: BENCH_STREAMS (1,000) streams of GET /v1/events/stream held open on the bench's one gateway, from
//     keys of ten streams each (the per-key limit) and from several loopback addresses (the per-address connection
//     limit); the gateway's resident memory before and with them open, per stream; then one create, and the time
//     from its 201 to its event on every one of them.
//   stream_lag: BENCH_STREAM_RATE (100) creates a second, paced, for one run, with BENCH_STREAM_LAG_STREAMS (100) streams
//     open: the lag from each create's 201 to its event on each stream (p50, p99), against the create's own p99 in the
//     same run.
import { request } from "node:https";
import { readFileSync } from "node:fs";
import { createRequests, httpsJson } from "./load.mjs";

const STREAMS = Number(process.env.BENCH_STREAMS ?? 1_000);
const RATE = Number(process.env.BENCH_STREAM_RATE ?? 100);
const LAG_STREAMS = Number(process.env.BENCH_STREAM_LAG_STREAMS ?? 100);
/** Streams one key may hold (CONTRACT.md section 14). */
const PER_KEY = 10;
/** Connections from one loopback address (the gateway's MAX_CONNECTIONS_PER_ADDRESS is 256). */
const PER_ADDRESS = 200;

const resourceIdOf = /"data":\{"object":\{"id":"(res_[0-9A-Za-z]+)"/;

/**
 * One open stream: each event's resource id and the time it arrived (`seen`, by id: the first arrival), read from its
 * `data` line without parsing the whole event.
 */
function openStream(url, { ca, key, localAddress }) {
  return new Promise((resolve, reject) => {
    const seen = new Map();
    const req = request(url, { ca, agent: false, localAddress, headers: { authorization: `Bearer ${key}` } }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`stream answered ${res.statusCode}`));
        return;
      }
      let buffer = "";
      res.setEncoding("utf8");
      res.on("data", (chunk) => {
        const at = performance.now();
        buffer += chunk;
        let end = buffer.indexOf("\n\n");
        while (end !== -1) {
          const id = resourceIdOf.exec(buffer.slice(0, end))?.[1];
          if (id && !seen.has(id)) seen.set(id, at);
          buffer = buffer.slice(end + 2);
          end = buffer.indexOf("\n\n");
        }
      });
      resolve({ seen, close: () => req.destroy() });
    });
    req.on("error", reject);
    req.end();
  });
}

/** Resident memory of a process (MB, /proc). */
function rssMb(pid) {
  const kb = Number(readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/)?.[1] ?? 0);
  return kb / 1024;
}

/** `count` streams from keys of the account, ten a key, spread over loopback addresses. */
async function openStreams({ stack, apiUrl, ca, accountId, count, say }) {
  const { KeyKind } = await import("@rms/proto");
  const keys = [];
  for (let i = 0; i < Math.ceil(count / PER_KEY); i++) {
    keys.push((await stack.admin.createKey({ accountId, kind: KeyKind.SECRET, livemode: false })).secret);
  }
  const streams = [];
  for (let i = 0; i < count; i += 50) {
    // 50 at a time: TLS handshakes are the cost of opening them.
    const batch = Array.from({ length: Math.min(50, count - i) }, (_, j) => {
      const n = i + j;
      return openStream(`${apiUrl}/v1/events/stream`, { ca, key: keys[Math.floor(n / PER_KEY)], localAddress: `127.0.2.${1 + Math.floor(n / PER_ADDRESS)}` });
    });
    streams.push(...(await Promise.all(batch)));
    if ((i + 50) % 500 === 0) say(`streams: ${i + 50} open`);
  }
  return streams;
}

/** The lag of each (create, stream) pair that arrived: the stream's arrival time less the create's 201. */
function lagsOf(answeredAt, streams) {
  const lags = [];
  let missing = 0;
  for (const stream of streams) {
    for (const [id, at] of answeredAt) {
      const arrived = stream.seen.get(id);
      if (arrived === undefined) missing++;
      else lags.push(arrived - at);
    }
  }
  lags.sort((x, y) => x - y);
  const at = (q) => lags[Math.min(lags.length - 1, Math.floor(q * lags.length))];
  return { p50: at(0.5), p99: at(0.99), max: lags.at(-1), total: lags.length, missing };
}

async function until(probe, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}

export async function streamRows({ run, results, stack, apiUrl, ca, headers, accountId, say }) {
  const gateway = () => stack.pids().gateway;

  // ---- 1,000 open streams on one gateway: memory per stream, and one event fanned out to all of them
  const before = rssMb(gateway());
  say(`streams: opening ${STREAMS} streams (gateway RSS ${before.toFixed(1)} MB)`);
  const opened = performance.now();
  const many = await openStreams({ stack, apiUrl, ca, accountId, count: STREAMS, say });
  const openSeconds = (performance.now() - opened) / 1000;
  // Settled: what opening them allocated and freed.
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  const withStreams = rssMb(gateway());
  const answeredAt = new Map();
  const created = await httpsJson("POST", `${apiUrl}/v1/resources`, ca, { ...headers, "content-type": "application/x-www-form-urlencoded" }, "name=fan-out");
  answeredAt.set(created.id, performance.now());
  const allGot = await until(() => many.every((s) => s.seen.has(created.id)), 60_000);
  const fanOut = lagsOf(answeredAt, many);
  results.streams_open = {
    streams: STREAMS,
    open_seconds: openSeconds,
    gateway_rss_mb_before: before,
    gateway_rss_mb_open: withStreams,
    rss_kb_per_stream: ((withStreams - before) * 1024) / STREAMS,
    fan_out_ms: { p50: fanOut.p50, p99: fanOut.p99, max: fanOut.max },
    fan_out_missing: allGot ? 0 : fanOut.missing,
  };
  say(
    `streams: ${STREAMS} open in ${openSeconds.toFixed(1)} s; gateway RSS ${before.toFixed(1)} -> ${withStreams.toFixed(1)} MB, ${results.streams_open.rss_kb_per_stream.toFixed(1)} KB per stream; one create reached all of them within ${fanOut.max?.toFixed(0)} ms of its 201 (p50 ${fanOut.p50?.toFixed(0)} ms)`,
  );
  for (const stream of many) stream.close();
  await new Promise((resolve) => setTimeout(resolve, 2_000));

  // ---- the lag at RATE creates/s with LAG_STREAMS streams open
  const streams = await openStreams({ stack, apiUrl, ca, accountId, count: LAG_STREAMS, say });
  const lagAnswers = new Map();
  await run.paced(
    "stream_create",
    `${apiUrl}/v1/resources`,
    createRequests(headers, (id, at) => lagAnswers.set(id, at)),
    RATE,
    stack.pids(),
  );
  await until(() => streams.every((s) => [...lagAnswers.keys()].every((id) => s.seen.has(id))), 30_000);
  const lag = lagsOf(lagAnswers, streams);
  for (const stream of streams) stream.close();
  const create = results.stream_create;
  results.stream_lag = {
    rps: RATE,
    streams: LAG_STREAMS,
    p50: lag.p50,
    p99: lag.p99,
    max: lag.max,
    total: lag.total,
    missing: lag.missing,
    non2xx: create.non2xx,
    errors: create.errors,
    create_p99: create.p99,
    p99_over_create_p99: lag.p99 / create.p99,
    rss_mb: {},
  };
  say(
    `streams: at ${RATE} creates/s with ${LAG_STREAMS} streams open, 201 -> event on a stream p50 ${lag.p50?.toFixed(1)} ms, p99 ${lag.p99?.toFixed(1)} ms (target p99 ≤ 250 ms), ${(lag.p99 / create.p99).toFixed(2)}× the create's own p99 (${create.p99?.toFixed(1)} ms); ${lag.missing} (create, stream) pairs missing`,
  );
}
