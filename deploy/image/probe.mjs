// Kubernetes exec probes, run inside the container as `rms-entrypoint probe <check>` (they reach what the process
// binds to 127.0.0.1 and present the pod's own certificate, which the kubelet's grpc and httpGet probes cannot):
//   core-ready  gRPC health (grpc.health.v1) of core at the port of CORE_ADDR answers SERVING (core and MongoDB up)
//   core-live   the same call answers at all (SERVING or NOT_SERVING: the process is responsive)
//   worker      the worker's GET /metrics on 127.0.0.1:WORKER_METRICS_PORT answers 200
// Exit 0 on success, 1 otherwise with one line on stderr. Reads only the variables of the process it checks.
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { createRequire } from "node:module";

const TIMEOUT_MS = 3_000;
const SERVING = 1;
const NOT_SERVING = 2;

const fail = (message) => {
  process.stderr.write(`probe: ${message}\n`);
  process.exit(1);
};

/** The status field (1, an enum) of a grpc.health.v1.HealthCheckResponse, or 0 (UNKNOWN) when absent. */
function healthStatus(bytes) {
  return bytes.length >= 2 && bytes[0] === 0x08 ? bytes[1] : 0;
}

function coreHealth(env) {
  // @grpc/grpc-js as core itself resolves it.
  const grpc = createRequire(new URL("../../apps/core/package.json", import.meta.url))("@grpc/grpc-js");
  const port = /:(\d+)$/.exec(env.CORE_ADDR ?? "127.0.0.1:50051")?.[1];
  if (!port) fail(`CORE_ADDR ${env.CORE_ADDR} has no port`);
  const files = [env.CORE_TLS_CA_FILE, env.CORE_TLS_KEY_FILE, env.CORE_TLS_CERT_FILE];
  // Core's own certificate as the client's: the CA checks it; the name is not checked (this is core's own loopback).
  const credentials = files.every(Boolean)
    ? grpc.credentials.createSsl(...files.map((file) => readFileSync(file)), { checkServerIdentity: () => undefined })
    : grpc.credentials.createInsecure();
  // A host name for TLS (an IP address may not be sent as the server name); unchecked, as said above.
  const client = new grpc.Client(`127.0.0.1:${port}`, credentials, { "grpc.ssl_target_name_override": "localhost" });
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      "/grpc.health.v1.Health/Check",
      (request) => request,
      (bytes) => bytes,
      Buffer.alloc(0),
      new grpc.Metadata(),
      { deadline: Date.now() + TIMEOUT_MS },
      (error, response) => {
        client.close();
        resolve(error ? { error: error.details || error.message } : { status: healthStatus(response) });
      },
    );
  });
}

function workerMetrics(env) {
  const port = Number(env.WORKER_METRICS_PORT || 9466);
  return new Promise((resolve) => {
    const req = request({ host: "127.0.0.1", port, path: "/metrics", timeout: TIMEOUT_MS }, (res) => {
      res.resume();
      resolve(res.statusCode === 200 ? {} : { error: `GET /metrics on port ${port} answered ${res.statusCode}` });
    });
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", (error) => resolve({ error: `GET /metrics on port ${port}: ${error.message}` }));
    req.end();
  });
}

const check = process.argv[2];
if (check === "core-ready" || check === "core-live") {
  const { status, error } = await coreHealth(process.env);
  if (error) fail(`core health: ${error}`);
  if (status !== SERVING && !(check === "core-live" && status === NOT_SERVING)) fail(`core health: status ${status} (1 is SERVING)`);
} else if (check === "worker") {
  const { error } = await workerMetrics(process.env);
  if (error) fail(error);
} else {
  fail(`unknown check ${check ?? "(none)"}; one of core-ready, core-live, worker`);
}
process.exit(0);
