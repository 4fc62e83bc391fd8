#!/usr/bin/env node
// The gRPC hop alone (issue 22, item 4): a grpc-js echo of rms.v1.ResourceService.GetResource (the real proto, no
// database) in a child process, called from this process in a closed loop at BENCH_CONNECTIONS (16) concurrent
// calls over one channel, under several channel and server option sets, each measured for BENCH_HOP_SECONDS (5 s)
// after a 1 s warm-up: calls per second and the CPU time per call of the server and of the client (from /proc).
// `node bench/src/grpc-hop.mjs` after a build. HOP_BEFORE=<another build of @rms/proto's dist/index.js> adds the sets
// "before" (that build with grpc-js defaults) for a before/after in the same run. The sets:
//   defaults:   grpc-js defaults, as core and the gateway ran before issue 22
//   tuned:      what @rms/proto now passes (HOP_CHANNEL_OPTIONS, HOP_SERVER_OPTIONS): no channelz
//   retries off: tuned, and grpc.enable_retries 0 (not taken: it also ends the transparent retries a restart needs)
//   interceptor: tuned, plus a server interceptor like core's metrics interceptor (a ServerInterceptingCall per call)
//   metadata:   tuned, with the metadata the gateway sends on a keyed create (7 entries) instead of 3
import { fork } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const SECONDS = Number(process.env.BENCH_HOP_SECONDS ?? 5);

const protoOf = (build) => import(build === "current" ? "@rms/proto" : build);

async function server(interceptor, tuned, build) {
  const grpc = await import("@grpc/grpc-js");
  const { ResourceService, ResourceStatus, addService, HOP_SERVER_OPTIONS = {} } = await protoOf(build);
  const resource = {
    id: "res_0VbmlGnEAqOeNqcwCzlGLg",
    name: "bench",
    status: ResourceStatus.ACTIVE,
    metadata: [{ key: "plan", value: "pro" }],
    created: 1700000000n,
  };
  const interceptors = interceptor
    ? [
        (_descriptor, call) =>
          new grpc.ServerInterceptingCall(call, {
            start: (next) => next({ onCancel: () => {} }),
            sendStatus: (status, next) => next(status),
          }),
      ]
    : [];
  const server = new grpc.Server({ ...(tuned ? HOP_SERVER_OPTIONS : {}), interceptors });
  const impl = {};
  for (const method of ResourceService.methods) impl[method.localName] = async () => ({ resource });
  addService(server, ResourceService, impl, { authorize: () => "gateway", onCallEnd: () => {} });
  process.once("SIGINT", () => process.exit(0));
  server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (error, port) => {
    if (error) throw error;
    process.send?.({ port });
  });
}

const cpuMs = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

async function measure(name, { tuned, interceptor, metadata, noRetries = false, build = "current" }) {
  const { ResourceService, createClient } = await protoOf(build);
  const child = fork(fileURLToPath(import.meta.url), ["server", String(interceptor), String(tuned), build]);
  const port = await new Promise((resolve) => child.once("message", (m) => resolve(m.port)));
  const client = createClient(ResourceService, `127.0.0.1:${port}`, {
    metadata: { authorization: "Bearer gateway-token-0123456789abcdef" },
    timeoutMs: 10_000,
    channelOptions: { "grpc.enable_channelz": tuned ? 0 : 1, ...(noRetries ? { "grpc.enable_retries": 0 } : {}) },
  });
  const request = { tenant: { accountId: "acct_x", livemode: false }, id: "res_0VbmlGnEAqOeNqcwCzlGLg" };
  const options = { metadata };
  const loop = async (seconds) => {
    let calls = 0;
    const end = performance.now() + seconds * 1000;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (performance.now() < end) {
          await client.getResource(request, options);
          calls++;
        }
      }),
    );
    return calls;
  };
  await loop(1);
  const serverBefore = cpuMs(child.pid);
  const clientBefore = process.cpuUsage();
  const calls = await loop(SECONDS);
  const clientUsage = process.cpuUsage(clientBefore);
  const serverMs = cpuMs(child.pid) - serverBefore;
  client.close();
  child.kill();
  const perCall = (ms) => ((1000 * ms) / calls).toFixed(0);
  return {
    name,
    callsPerSecond: Math.round(calls / SECONDS),
    serverUsPerCall: perCall(serverMs),
    clientUsPerCall: perCall((clientUsage.user + clientUsage.system) / 1000),
  };
}

if (process.argv[2] === "server") {
  await server(process.argv[3] === "true", process.argv[4] === "true", process.argv[5] ?? "current");
} else {
  // Metadata of the sizes a real call carries; the key is made here, of a key's length, and names no account.
  const placeholderKey = `sk_test_${"x".repeat(32)}`;
  const few = { "rms-request-id": "req_0123456789abcdefghij", "rms-api-key": placeholderKey, "rms-api-key-id": "key_0VbmlGnEAqOeNqcwCzlGLg" };
  const many = {
    ...few,
    "idempotency-key": "bench-12345-1700000000000-42",
    "rms-request-fingerprint": "Yp3m8Vt2qk9XJ0c8rQ3mN6vL1sD4fG7hJ2kL5zX8cV0",
    "rms-answer-headers": JSON.stringify([
      { name: "Api-Version", value: "1.4" },
      { name: "Content-Type", value: "application/json; charset=utf-8" },
      { name: "Cache-Control", value: "no-store" },
      { name: "Access-Control-Allow-Origin", value: "*" },
    ]),
  };
  const before = process.env.HOP_BEFORE;
  const sets = [
    ...(before ? [["before: that build, grpc-js defaults, with core's interceptor", { tuned: false, interceptor: true, metadata: few, build: before }]] : []),
    ["after: this build, tuned, with core's interceptor", { tuned: true, interceptor: true, metadata: few }],
    ...(before ? [["before, no interceptor", { tuned: false, interceptor: false, metadata: few, build: before }]] : []),
    ["this build, grpc-js defaults (channelz on), no interceptor", { tuned: false, interceptor: false, metadata: few }],
    ["this build, tuned, no interceptor", { tuned: true, interceptor: false, metadata: few }],
    ["tuned, and retries off (transparent ones too; not taken)", { tuned: true, interceptor: false, metadata: few, noRetries: true }],
    ["tuned, with a keyed create's metadata (7 entries)", { tuned: true, interceptor: false, metadata: many }],
  ];
  // Rounds of every set in turn, so a change in the machine's load weighs on all of them alike; the median is shown.
  const rounds = Number(process.env.BENCH_HOP_ROUNDS ?? 3);
  const runs = new Map(sets.map(([name]) => [name, []]));
  for (let round = 0; round < rounds; round++) {
    for (const [name, set] of sets) {
      const r = await measure(name, set);
      runs.get(name).push(r);
      process.stderr.write(`${JSON.stringify(r)}\n`);
    }
  }
  const median = (values) => values.sort((x, y) => x - y)[Math.floor(values.length / 2)];
  const rows = sets.map(([name]) => {
    const of = runs.get(name);
    return {
      name,
      callsPerSecond: median(of.map((r) => r.callsPerSecond)),
      serverUsPerCall: median(of.map((r) => Number(r.serverUsPerCall))),
      clientUsPerCall: median(of.map((r) => Number(r.clientUsPerCall))),
    };
  });
  process.stdout.write(
    `Medians of ${rounds} rounds (load average at the end ${(await import("node:os")).loadavg()[0].toFixed(1)}).\n\n| options | calls/s | server µs CPU per call | client µs CPU per call |\n|---|---|---|---|\n`,
  );
  for (const r of rows) process.stdout.write(`| ${r.name} | ${r.callsPerSecond} | ${r.serverUsPerCall} | ${r.clientUsPerCall} |\n`);
}
