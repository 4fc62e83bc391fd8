// `npm run release-data -- --commit <commit>`: the packed database of a release (docs/migrations.md, "Packed
// release data"). Builds the release's commit beside this tree (build.ts), starts that build's own `rms start` on a
// fresh `mongod` data directory, writes every kind of data through its public API (write-data.ts), stops the stack
// and the server cleanly, and packs the data directory with the manifest of what it holds into
// `apps/cli/test-data/releases/<release>/`.
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newMasterKeyText } from "@rms/core/settings";
import { freePort, startDatabase } from "@rms/test-db";
import { MongoClient } from "mongodb";
import { Api } from "./http.js";
import { ARCHIVE_FILE, MANIFEST_FILE, manifestText, RELEASES_DATA_DIR, type ReleaseManifest } from "./manifest.js";
import { releaseBuild } from "./build.js";
import { binaryEngineEnv, packDataDirectory } from "./pack.js";
import { writeReleaseData } from "./write-data.js";

const say = (line: string) => process.stderr.write(`release-data: ${line}\n`);
/** The database name of the packed data (MONGODB_DATABASE). */
const DATABASE = "rms";

function argument(name: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : undefined;
}

async function main(): Promise<number> {
  const commit = argument("commit");
  if (!commit) {
    say("usage: npm run release-data -- --commit <commit> [--out <dir>]");
    return 2;
  }
  const build = await releaseBuild(commit, { log: say });
  const out = argument("out") ?? join(RELEASES_DATA_DIR, build.release);
  const work = mkdtempSync(join(tmpdir(), "rms-release-data-"));
  const dbDir = join(work, "db");
  // A server of this machine's launcher (never MONGODB_URI: the data directory is what is packed).
  const database = await startDatabase({ dataDir: dbDir, env: binaryEngineEnv(process.env), skip: ["external", "testcontainers"], logger: say });
  let launcher: ReturnType<typeof spawn> | undefined;
  try {
    const client = await new MongoClient(database.uri).connect();
    const fcv = (await client.db("admin").command({ getParameter: 1, featureCompatibilityVersion: 1 }))["featureCompatibilityVersion"] as { version: string };
    await client.close();
    say(`mongod ${database.version} (feature compatibility ${fcv.version}); release ${build.release} at ${build.commit.slice(0, 12)} (${build.dir})`);

    const secretKey = newMasterKeyText();
    const adminToken = randomBytes(24).toString("hex");
    const port = await freePort();
    const httpPort = await freePort();
    const coreAddr = `127.0.0.1:${await freePort()}`;
    const stackDir = join(work, "stack");
    const env: Record<string, string> = {
      PATH: process.env["PATH"] ?? "",
      HOME: process.env["HOME"] ?? "",
      MONGODB_URI: database.uri,
      MONGODB_DATABASE: DATABASE,
      RMS_DATA_DIR: stackDir,
      PORT: String(port),
      HTTP_PORT: String(httpPort),
      CORE_ADDR: coreAddr,
      METRICS_PORT: "0",
      CORE_METRICS_PORT: "0",
      WORKER_METRICS_PORT: "0",
      RMS_ADMIN_TOKEN: adminToken,
      RMS_SECRET_KEY: secretKey,
      WEBHOOK_ALLOW_PRIVATE: "true",
      // A failed delivery comes back in a minute: the deliveries left pending are due soon after the upgrade.
      WEBHOOK_RETRY_SCHEDULE: "1m,5m,30m,2h",
      RATE_LIMIT_TEST: "100000",
      RATE_LIMIT_LIVE: "100000",
      RATE_LIMIT_ADDRESS: "100000",
      LOG_LEVEL: "warn",
    };
    // The release's own launcher: its processes get the environment that release expects.
    const child = spawn(process.execPath, [build.entryPoint("rms"), "start"], { env, stdio: ["ignore", "ignore", "pipe"] });
    launcher = child;
    let output = "";
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const deadline = Date.now() + 180_000;
    while (!output.includes("rms: ready")) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`rms start of ${build.release} did not get ready:\n${output}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    say(`${build.release} ready on ${port}; writing`);
    const api = new Api(stackDir, port);
    const written = await writeReleaseData({ api, coreAddr, adminToken, httpPort, log: say });
    api.close();

    child.kill("SIGTERM");
    const code = await new Promise<number | null>((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once("exit", resolve)));
    launcher = undefined;
    if (code !== 0) throw new Error(`rms start of ${build.release} exited ${code}:\n${output}`);
    await database.stop();
    // A clean shutdown leaves the lock file empty; a server that was killed leaves its pid there.
    if (statSync(join(dbDir, "mongod.lock")).size !== 0) throw new Error("mongod did not shut down cleanly (mongod.lock is not empty)");

    mkdirSync(out, { recursive: true });
    const archive = join(out, ARCHIVE_FILE);
    await packDataDirectory(dbDir, archive);
    const bytes = readFileSync(archive);
    const manifest: ReleaseManifest = {
      release: build.release,
      commit: build.commit,
      mongod: { version: database.version, feature_compatibility_version: fcv.version },
      database: DATABASE,
      archive: { file: ARCHIVE_FILE, sha256: createHash("sha256").update(bytes).digest("hex"), bytes: bytes.length },
      settings: { RMS_SECRET_KEY: secretKey },
      ...written,
    };
    writeFileSync(join(out, MANIFEST_FILE), manifestText(manifest));
    say(`packed ${archive} (${(bytes.length / 1024 / 1024).toFixed(2)} MiB) and ${join(out, MANIFEST_FILE)}`);
    return 0;
  } finally {
    launcher?.kill("SIGTERM");
    await database.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

process.exitCode = await main().catch((error: unknown) => {
  say(error instanceof Error ? (error.stack ?? error.message) : String(error));
  return 1;
});
