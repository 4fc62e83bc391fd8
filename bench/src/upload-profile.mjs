#!/usr/bin/env node
// Where an upload's CPU goes in the gateway and in core (docs/files.md, "The two missed rows"): on demand, not part of
// `npm run bench`. A stack of its own (database, core, gateway), one POST /v1/files of PROFILE_UPLOAD_MB (64) MiB,
// both processes profiled through the inspector while it runs, into bench/results/profiles/upload-{gateway,core}.cpuprofile
// (read them with profile-top.mjs). Run from bench/ after a build: `../node_modules/.bin/node src/upload-profile.mjs`.
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { Agent } from "node:https";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startDatabase } from "@rms/test-db";
import { freePort, newTestKey, startCoreProcess, startGatewayProcess } from "@rms/cli/stack";
import { paddingChunks, upload } from "./files.mjs";
import { cpuProfiler, inspectorSession } from "./inspector.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const MB = Number(process.env.PROFILE_UPLOAD_MB ?? 64);
const profiles = join(root, "bench/results/profiles");
mkdirSync(profiles, { recursive: true });

/** A CPU profiler of the process whose inspector listens on `port`: start(), then stop(name) writes its profile. */
async function profiler(port) {
  const session = await inspectorSession(port);
  const cpu = await cpuProfiler(session, profiles);
  return {
    start: cpu.start,
    async stop(name) {
      await cpu.stop(name);
      session.close();
    },
  };
}

const dir = mkdtempSync(join(tmpdir(), "rms-upload-profile-"));
const database = await startDatabase({ dataDir: join(dir, "db"), env: { ...process.env, MONGODB_URI: "" } });
const databaseName = "uploadprofile";
const corePort = await freePort();
const gatewayPort = await freePort();
const inspectors = { core: await freePort(), gateway: await freePort() };
const inspect = (name) => ({ NODE_OPTIONS: `--inspect=127.0.0.1:${inspectors[name]}` });
const core = await startCoreProcess({ mongoUri: database.uri, databaseName, port: corePort, env: inspect("core") });
const gateway = await startGatewayProcess({
  coreAddr: `127.0.0.1:${corePort}`,
  mongoUri: database.uri,
  databaseName,
  dataDir: dir,
  port: gatewayPort,
  env: inspect("gateway"),
});
const { secret } = await newTestKey(`127.0.0.1:${corePort}`);
const agent = new Agent({ ca: readFileSync(join(dir, "tls", "cert.pem")), keepAlive: true });
const profilers = { core: await profiler(inspectors.core), gateway: await profiler(inspectors.gateway) };
try {
  for (const p of Object.values(profilers)) await p.start();
  const t = performance.now();
  const file = await upload({ port: gatewayPort, agent, key: secret, chunks: paddingChunks(MB * 1024 * 1024), filename: "big.jsonl" });
  console.log(`upload of ${file.size} bytes in ${Math.round(performance.now() - t)} ms`);
  for (const [name, p] of Object.entries(profilers)) await p.stop(`upload-${name}`);
} finally {
  agent.destroy();
  await gateway.stop();
  await core.stop();
  await database.stop();
  rmSync(dir, { recursive: true, force: true });
}
