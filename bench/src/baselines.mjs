#!/usr/bin/env node
// The baselines of `npm run bench`, each a child process of its own (run as `node baselines.mjs <role> ...`):
//   baseline-a: bare Express 5 over HTTPS answering a fixed JSON resource.
//   baseline-b: the same route calling a grpc-js echo service (the real rms.v1.ResourceService proto, no database).
//   echo:       that echo service.
//   baseline-c: Express 5 and the mongodb driver in one process, what a user would write instead (baseline-c.mjs).
//   baseline-e, floor-core: floor E, the stack's two processes doing nothing but C's reads (baseline-e.mjs).
// Baseline D, the driver alone, runs in the bench's own process (driver.mjs).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

/** The resource every baseline answers. */
export const FIXED = { id: "res_0VbmlGnEAqOeNqcwCzlGLg", object: "resource", name: "bench", status: "active", metadata: { plan: "pro" }, created: 1700000000 };

/** Starts one role as a child process; resolves once it listens. */
export async function startRole(name, args, { stdout = "inherit", env = process.env } = {}) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), name, ...args], { stdio: ["ignore", stdout, "inherit", "ipc"], env });
  await new Promise((resolve, reject) => {
    child.once("message", resolve);
    child.once("exit", (code) => reject(new Error(`${name} exited (${code})`)));
  });
  return child;
}

async function baseline(role, port, certFile, keyFile, echoAddr) {
  const { default: express } = await import("express");
  const { createServer } = await import("node:https");
  const app = express();
  app.disable("x-powered-by");
  app.disable("etag");
  if (role === "baseline-a") {
    app.get("/v1/resources/:id", (_req, res) => {
      res.type("application/json").send(JSON.stringify(FIXED));
    });
  } else {
    const { ResourceService, createClient } = await import("@rms/proto");
    const client = createClient(ResourceService, echoAddr, { timeoutMs: 10_000 });
    app.get("/v1/resources/:id", async (req, res) => {
      const { resource } = await client.getResource({ tenant: { accountId: "acct_x", livemode: false }, id: req.params.id });
      const metadata = Object.create(null);
      for (const { key, value } of resource.metadata) metadata[key] = value;
      res
        .type("application/json")
        .send(JSON.stringify({ id: resource.id, object: "resource", name: resource.name, status: "active", metadata, created: Number(resource.created) }));
    });
  }
  createServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, app).listen(Number(port), "127.0.0.1", () => process.send?.("ready"));
}

async function echo(port) {
  const { Server, ServerCredentials } = await import("@grpc/grpc-js");
  const { ResourceService, ResourceStatus, addService, HOP_SERVER_OPTIONS } = await import("@rms/proto");
  const resource = { id: FIXED.id, name: FIXED.name, status: ResourceStatus.ACTIVE, metadata: [{ key: "plan", value: "pro" }], created: BigInt(FIXED.created) };
  // The same server options as core's (its clients get @rms/proto's channel options, as the gateway's do).
  const server = new Server({ ...HOP_SERVER_OPTIONS });
  const impl = {};
  for (const method of ResourceService.methods) impl[method.localName] = async () => ({ resource });
  impl.listResources = async () => ({ resources: [resource], hasMore: false });
  impl.deleteResource = async () => ({ id: FIXED.id });
  addService(server, ResourceService, impl);
  server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (error) => {
    if (error) throw error;
    process.send?.("ready");
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const [, , role, ...args] = process.argv;
  if (role === "baseline-a" || role === "baseline-b") await baseline(role, ...args);
  else if (role === "echo") await echo(args[0]);
  else if (role === "baseline-c") await (await import("./baseline-c.mjs")).baselineC(...args);
  else if (role === "baseline-e") await (await import("./baseline-e.mjs")).baselineE(...args);
  else if (role === "floor-core") await (await import("./baseline-e.mjs")).floorCore(...args);
  else throw new Error(`unknown role ${role}`);
}
