import { status as GrpcStatus } from "@grpc/grpc-js";
import { KeyKind, TransportError, catalogueError, keyHash } from "@rms/proto";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { CoreClients } from "../core.js";
import type { PendingRevocation, PendingRevocationStore } from "./pending-store.js";
import { KeyRevoker, MAX_PENDING_IN_MEMORY } from "./revoker.js";
import { MAX_CANDIDATES } from "./scan.js";

// The revoker on its own, with core and the store replaced: what one gateway keeps in memory and asks core
// while core is unreachable (CONTRACT.md section 8). End to end, through the plain listener: plain-http.flood.e2e.test.ts.

const keyOf = (i: number) => `sk_test_${String(i).padStart(32, "0")}`;

/** Core that is down until `up` is set; once up, `valid` are the usable keys (by hash) and `revoked` collects what it revoked. */
function fakeCore(valid: readonly string[]) {
  const byHash = new Map(valid.map((secret, i) => [keyHash(secret), { id: `key_${i}`, kind: KeyKind.SECRET }]));
  const state = { up: false, calls: 0, revoked: [] as string[] };
  const down = () =>
    Promise.reject(new TransportError(GrpcStatus.UNAVAILABLE, { type: "api_error", code: "service_unavailable", message: "No connection established" }));
  const admin = {
    verifyKey(request: { secretHash: string }) {
      state.calls++;
      if (!state.up) return down();
      const key = byHash.get(request.secretHash);
      return key ? Promise.resolve({ key }) : Promise.reject(catalogueError("api_key_invalid", "Invalid API key"));
    },
    // By the hash it saw, never by id (issue 31): the id of the key with that hash is recorded.
    revokeKey(request: { keyId?: string; secretHash: string }) {
      state.calls++;
      if (!state.up) return down();
      if (request.keyId) return Promise.reject(catalogueError("method_not_allowed", "by id"));
      const key = byHash.get(request.secretHash);
      if (!key) return Promise.reject(catalogueError("api_key_invalid", "Invalid API key"));
      state.revoked.push(key.id);
      return Promise.resolve({});
    },
  };
  return { core: { admin } as unknown as Pick<CoreClients, "admin">, state };
}

/** A store that refuses every write while `down` (the gateway then has only its memory). */
function fakeStore() {
  const records = new Map<string, PendingRevocation>();
  const state = { down: true };
  const refuse = () => Promise.reject(new Error("store unreachable"));
  const store: PendingRevocationStore = {
    add: (record) => (state.down ? refuse() : Promise.resolve(void records.set(record.hash, record))),
    list: () => (state.down ? refuse() : Promise.resolve([...records.values()])),
    remove: (hash) => (state.down ? refuse() : Promise.resolve(void records.delete(hash))),
  };
  return { store, records, state };
}

function capturingLogger() {
  const lines: { msg: string; [field: string]: unknown }[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string }) });
  return { logger, lines };
}

describe("KeyRevoker while core is unreachable", () => {
  it(
    "keeps at most 10,000 pending hashes (oldest dropped first), asks core once, logs a bounded number of lines, and revokes the valid keys it kept " +
      "once core is back",
    async () => {
      const total = MAX_PENDING_IN_MEMORY + 2_000;
      const firstValid = keyOf(0);
      const lastValid = keyOf(total - 1);
      const { core, state } = fakeCore([firstValid, lastValid]);
      const { store, records, state: storeState } = fakeStore();
      const { logger, lines } = capturingLogger();
      const revoker = new KeyRevoker(core, store, logger, { retryMs: 60_000 });
      try {
        const started = Date.now();
        for (let i = 0; i < total; i += MAX_CANDIDATES) {
          const candidates = Array.from({ length: Math.min(MAX_CANDIDATES, total - i) }, (_, j) => keyOf(i + j));
          await revoker.revokeSeen(candidates, `req_${i}`, (count) => Promise.resolve(count));
        }
        const elapsedS = (Date.now() - started) / 1000;
        console.log(
          `${total} candidates in ${total / MAX_CANDIDATES} requests: ${revoker.pendingCount} pending kept, ${state.calls} core calls, ${lines.length} ` +
            `log lines in ${elapsedS.toFixed(2)} s`,
        );

        expect(revoker.pendingCount).toBe(MAX_PENDING_IN_MEMORY);
        expect(revoker.isPending(firstValid)).toBe(false); // among the oldest: dropped
        expect(revoker.isPending(keyOf(total - MAX_PENDING_IN_MEMORY - 1))).toBe(false);
        expect(revoker.isPending(keyOf(total - MAX_PENDING_IN_MEMORY))).toBe(true);
        expect(revoker.isPending(lastValid)).toBe(true);
        // The first candidate found core unreachable; the others went straight to pending.
        expect(state.calls).toBe(1);
        // At most one warning per second, whatever the number of requests.
        expect(lines.length).toBeLessThanOrEqual(Math.ceil(elapsedS) + 1);

        // Core and the store are back: the kept valid key is revoked, and the pending ones are forgotten.
        state.up = true;
        storeState.down = false;
        await revoker.retryPending();
        expect(state.revoked).toEqual(["key_1"]);
        expect(revoker.isPending(lastValid)).toBe(false);
        expect(revoker.pendingCount).toBe(0);
        expect(records.size).toBe(0);
        expect(lines.some((line) => line.msg.includes("dropped from memory") && line["dropped"] === 2_000)).toBe(true);
      } finally {
        revoker.close();
      }
    },
  );

  it("keeps only hashes: what reaches the store holds no secret", async () => {
    const { core } = fakeCore([]);
    const { store, records, state: storeState } = fakeStore();
    storeState.down = false;
    const revoker = new KeyRevoker(core, store, pino({ level: "silent" }), { retryMs: 60_000 });
    try {
      await revoker.revokeSeen([keyOf(1), keyOf(2)], "req_1", (count) => Promise.resolve(count));
      expect([...records.keys()].sort()).toEqual([keyHash(keyOf(1)), keyHash(keyOf(2))].sort());
      expect(JSON.stringify([...records.values()])).not.toContain(keyOf(1).slice(8));
    } finally {
      revoker.close();
    }
  });

  it("looks up only the candidates the address has tokens for, at most 20 per request", async () => {
    const { core, state } = fakeCore([]);
    state.up = true;
    const { store } = fakeStore();
    const revoker = new KeyRevoker(core, store, pino({ level: "silent" }), { retryMs: 60_000 });
    try {
      const asked: number[] = [];
      const candidates = Array.from({ length: 25 }, (_, i) => keyOf(100 + i));
      await revoker.revokeSeen(candidates, "req_1", (count) => {
        asked.push(count);
        return Promise.resolve(3);
      });
      expect(asked).toEqual([MAX_CANDIDATES]);
      expect(state.calls).toBe(3);
    } finally {
      revoker.close();
    }
  });
});
