// The load and the meters of `npm run bench`: HTTP runs (autocannon, a warm-up then the measured run), gRPC
// closed loops, and each process's CPU time and resident memory from /proc during a run.
import { readdirSync, readFileSync } from "node:fs";

/**
 * A runner of the HTTP and gRPC runs at one concurrency and duration, writing each run's figures into `results`
 * under its name. `pids` names the processes whose RSS and CPU are measured (the load generator is added).
 */
export async function runner({ results, connections, duration, warmup, ca, say }) {
  const { default: autocannon } = await import("autocannon");
  const measured = async (name, pids, run, totalOf) => {
    say(`run ${name}`);
    await run(warmup);
    const rss = sampleRss(pids);
    const cpu = cpuMeter({ ...pids, load: process.pid });
    const r = await run(duration);
    const cpuMs = cpu.stop();
    const perRequest = Object.fromEntries(Object.entries(cpuMs).map(([p, ms]) => [p, ms / Math.max(1, totalOf(r))]));
    return { r, rss_mb: rss.stop(), cpu_ms_per_request: perRequest };
  };
  const cannon = (url, opts, seconds) =>
    autocannon({
      url,
      connections: opts.connections ?? connections,
      duration: seconds,
      timeout: 60,
      tlsOptions: { ca },
      headers: opts.headers ?? {},
      method: opts.method ?? "GET",
      ...(opts.requests ? { requests: opts.requests } : {}),
      ...(opts.body ? { body: opts.body } : {}),
    });
  return {
    /** An unmeasured autocannon run as long as a measured one (warm-up included), same options as `http`. */
    async warm(url, opts = {}) {
      await cannon(url, opts, warmup + duration);
    },
    /** An autocannon run: `opts` are its headers, method, body or requests (per-request hooks). */
    async http(name, url, opts = {}, pids = {}) {
      const run = (seconds) => cannon(url, opts, seconds);
      const { r, rss_mb, cpu_ms_per_request } = await measured(name, pids, run, (r) => r.requests.total);
      results[name] = {
        rps: r.requests.average,
        p50: r.latency.p50,
        p99: r.latency.p99,
        non2xx: r.non2xx,
        errors: r.errors + r.timeouts,
        total: r.requests.total,
        rss_mb,
        cpu_ms_per_request,
      };
    },
    /**
     * `rate` requests per second, each sent at its own time whatever became of those before it (paced: an open
     * loop, as many independent clients make them). autocannon's `overallRate` is not that: each connection sends
     * its quota as fast as it can at the start of every second, so a "steady" 20/s arrives as a burst of 20 at
     * once and its latencies measure the burst's queue. `opts` as for `http` (headers, method, body, requests).
     */
    async paced(name, url, opts, rate, pids = {}) {
      const run = (seconds) => pacedRun(url, opts, rate, seconds, ca);
      const { r, rss_mb, cpu_ms_per_request } = await measured(name, pids, run, (r) => r.total);
      results[name] = { ...r, rss_mb, cpu_ms_per_request };
    },
    /**
     * HTTP runs compared with each other (`{ name, url, opts, pids }` each), in the order A B B A (A B E E B A for
     * three; a side that is null is left out): each side's figures are the mean of its two rounds, so a drift of the
     * shared machine over the runs (a neighbour's burst, JIT settling) weighs on every side alike; `rounds` keeps
     * each round's req/s.
     */
    async pair(...given) {
      const sides = given.filter((side) => side !== null);
      const rounds = new Map(sides.map((side) => [side.name, []]));
      for (const side of [...sides, ...sides.toReversed()]) {
        await this.http(side.name, side.url, side.opts ?? {}, side.pids ?? {});
        rounds.get(side.name).push(results[side.name]);
      }
      for (const [name, both] of rounds) results[name] = meanOfRounds(both);
    },
    /** `connections` loops calling `client.getResource(request)` back to back. */
    async grpc(name, client, request, pids = {}) {
      await this.loop(name, () => client.getResource(request), pids);
    },
    /** `connections` loops calling `call` back to back (the driver alone, baseline D; a gRPC client). */
    async loop(name, call, pids = {}) {
      const run = (seconds) => closedLoop(call, connections, seconds);
      const { r, rss_mb, cpu_ms_per_request } = await measured(name, pids, run, (r) => r.total);
      results[name] = { ...r, rss_mb, cpu_ms_per_request };
    },
  };
}

/** The mean of runs of one kind: req/s and latencies averaged, counts summed, CPU per request averaged per process. */
export function meanOfRounds(runs) {
  const mean = (pick) => runs.reduce((sum, r) => sum + pick(r), 0) / runs.length;
  const processes = [...new Set(runs.flatMap((r) => Object.keys(r.cpu_ms_per_request ?? {})))];
  return {
    rps: mean((r) => r.rps),
    p50: mean((r) => r.p50),
    p99: mean((r) => r.p99),
    non2xx: runs.reduce((sum, r) => sum + r.non2xx, 0),
    errors: runs.reduce((sum, r) => sum + r.errors, 0),
    total: runs.reduce((sum, r) => sum + r.total, 0),
    rss_mb: runs.at(-1).rss_mb,
    cpu_ms_per_request: Object.fromEntries(processes.map((p) => [p, mean((r) => r.cpu_ms_per_request?.[p] ?? 0)])),
    rounds: runs.map((r) => Math.round(r.rps)),
  };
}

/**
 * One form create per request with a fresh Idempotency-Key, as autocannon `requests`; `onAnswer` (when given)
 * learns each 201's resource id with the time it was answered.
 */
export function createRequests(headers, onAnswer) {
  let n = 0;
  return {
    method: "POST",
    requests: [
      {
        method: "POST",
        setupRequest: (req) => ({
          ...req,
          headers: { ...headers, "content-type": "application/x-www-form-urlencoded", "idempotency-key": `bench-${process.pid}-${Date.now()}-${n++}` },
          body: "name=bench&metadata[plan]=pro",
        }),
        ...(onAnswer
          ? {
              onResponse: (status, body) => {
                if (status === 201) onAnswer(JSON.parse(body).id, performance.now());
              },
            }
          : {}),
      },
    ],
  };
}

/** The p50 and p99 of `latencies` (ms; sorted here), NaN when there are none. */
function medianAndP99(latencies) {
  latencies.sort((x, y) => x - y);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return { p50: at(0.5), p99: at(0.99) };
}

/** One request of `opts` as autocannon would prepare it (its `requests[0].setupRequest`, else the plain fields). */
function preparedRequest(opts) {
  const template = opts.requests?.[0];
  const base = { method: opts.method ?? template?.method ?? "GET", headers: opts.headers ?? {}, body: opts.body };
  return template?.setupRequest ? template.setupRequest(base) : base;
}

/** The open loop of `paced`: request i leaves at i / rate s, over keep-alive connections opened as needed. */
async function pacedRun(url, opts, rate, seconds, ca) {
  const { Agent, request } = await import("node:https");
  const agent = new Agent({ ca, keepAlive: true, maxSockets: 1024 });
  const onResponse = opts.requests?.[0]?.onResponse;
  const latencies = [];
  let errors = 0;
  let non2xx = 0;
  const send = () =>
    new Promise((resolve) => {
      const { method, headers, body } = preparedRequest(opts);
      const sent = performance.now();
      const req = request(
        url,
        { method, agent, headers: body === undefined ? headers : { ...headers, "content-length": String(Buffer.byteLength(body)) } },
        (res) => {
          const chunks = [];
          res.on("data", (chunk) => chunks.push(chunk));
          res.on("end", () => {
            latencies.push(performance.now() - sent);
            if (res.statusCode >= 300) non2xx++;
            onResponse?.(res.statusCode, Buffer.concat(chunks).toString("utf8"));
            resolve();
          });
        },
      );
      req.on("error", () => {
        errors++;
        resolve();
      });
      req.end(body);
    });
  const count = Math.max(1, Math.round(rate * seconds));
  const sending = [];
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const wait = t0 + (i * 1000) / rate - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    sending.push(send());
  }
  await Promise.all(sending);
  agent.destroy();
  return { rps: count / seconds, ...medianAndP99(latencies), total: count, errors, non2xx };
}

/** `concurrency` loops calling `call` back to back for `seconds`; throughput and latency percentiles. */
export async function closedLoop(call, concurrency, seconds) {
  const latencies = [];
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        try {
          await call();
          latencies.push(performance.now() - t);
        } catch {
          errors++;
        }
      }
    }),
  );
  return { rps: latencies.length / seconds, ...medianAndP99(latencies), errors, total: latencies.length };
}

/** Waits until the async `probe` answers true (looking every 100 ms), or throws after `timeoutMs`. */
export async function eventually(probe, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The highest RSS each process reached in any run. */
export function peakRss(results) {
  const peak = {};
  for (const r of Object.values(results)) for (const [p, mb] of Object.entries(r.rss_mb ?? {})) peak[p] = Math.max(peak[p] ?? 0, mb);
  return peak;
}

/** Direct children of a process (Linux /proc). */
export function childPids(pid) {
  const out = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {}
  }
  return out;
}

/** CPU time (user + system, ms) each process spends between start and stop, from /proc. */
export function cpuMeter(pids) {
  const tick = 1000 / 100; // USER_HZ is 100 on Linux
  const read = () => {
    const times = {};
    for (const [name, pid] of Object.entries(pids)) {
      try {
        const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
        times[name] = (Number(fields[11]) + Number(fields[12])) * tick;
      } catch {}
    }
    return times;
  };
  const before = read();
  return {
    stop: () => {
      const after = read();
      return Object.fromEntries(
        Object.keys(after)
          .filter((n) => n in before)
          .map((n) => [n, after[n] - before[n]]),
      );
    },
  };
}

/** Peak resident memory (MB) of each named process, sampled every 250 ms until `stop`. */
export function sampleRss(pids) {
  const peak = {};
  const sample = () => {
    for (const [name, pid] of Object.entries(pids)) {
      try {
        const kb = Number(readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/)?.[1] ?? 0);
        peak[name] = Math.max(peak[name] ?? 0, Math.round(kb / 1024));
      } catch {}
    }
  };
  sample();
  const timer = setInterval(sample, 250);
  return {
    stop: () => {
      clearInterval(timer);
      sample();
      return peak;
    },
  };
}

/** Mean seconds per gRPC method and per database command, from core's Prometheus text. */
export async function coreBreakdown(port) {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const mean = (metric, label) => {
    const sums = {};
    for (const line of text.split("\n")) {
      const m = line.match(new RegExp(`^${metric}_(sum|count)\\{([^}]*)\\} (\\S+)$`));
      if (!m) continue;
      const name = m[2].match(new RegExp(`${label}="([^"]*)"`))?.[1];
      const okay = !m[2].includes('grpc_code="') || m[2].includes('grpc_code="OK"');
      if (!name || !okay) continue;
      sums[name] ??= { sum: 0, count: 0 };
      sums[name][m[1]] += Number(m[3]);
    }
    return Object.entries(sums)
      .filter(([, v]) => v.count > 0)
      .sort((x, y) => y[1].count - x[1].count)
      .map(([name, v]) => `${name.replace(/^\/rms\.v1\./, "")} ${((1000 * v.sum) / v.count).toFixed(2)} ms × ${v.count}`)
      .join(", ");
  };
  return { calls: mean("grpc_server_handling_seconds", "grpc_method"), commands: mean("mongodb_command_duration_seconds", "command") };
}

/** One HTTPS request (a fresh request each time, as a plain client makes it); the 2xx body as JSON, else throws. */
export async function httpsJson(method, url, ca, headers, body) {
  const { request } = await import("node:https");
  return new Promise((resolve, reject) => {
    const req = request(url, { method, ca, headers }, (res) => {
      let text = "";
      res.on("data", (d) => (text += d));
      res.on("end", () => (res.statusCode < 300 ? resolve(JSON.parse(text)) : reject(new Error(`${method} ${url}: ${res.statusCode} ${text}`))));
    });
    req.on("error", reject);
    req.end(body);
  });
}
