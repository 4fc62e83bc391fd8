import { randomBytes } from "node:crypto";
import { ApiError } from "../errors.js";
import { LOCK_TIMEOUT_MS, RETENTION_MS, scopeId, type BeginResult, type IdempotencyScope, type IdempotencyStore, type RecordedResponse } from "./store.js";

interface Entry {
  fingerprint: string;
  created: number;
  owner: string;
  lockedUntil: number;
  response?: RecordedResponse;
}

/** Idempotency records in process memory: for tests with a fake core (one gateway, nothing survives a restart). */
export class MemoryIdempotencyStore implements IdempotencyStore {
  private readonly entries = new Map<string, Entry>();
  constructor(private readonly now: () => number = Date.now) {}

  begin(scope: IdempotencyScope, fingerprint: string): Promise<BeginResult> {
    const id = scopeId(scope);
    const now = this.now();
    const existing = this.entries.get(id);
    if (existing && existing.created >= now - RETENTION_MS) {
      if (existing.fingerprint !== fingerprint) {
        return Promise.reject(new ApiError("idempotency_key_reused", "Keys for idempotent requests can only be used with the same parameters they were first used with."));
      }
      if (existing.response) return Promise.resolve({ kind: "replay", response: existing.response });
      if (existing.lockedUntil >= now) {
        return Promise.reject(new ApiError("idempotency_key_in_use", "There is currently another in-progress request using this Idempotency-Key. Please try again later."));
      }
    }
    const owner = randomBytes(12).toString("base64url");
    this.entries.set(id, { fingerprint, created: existing?.created ?? now, owner, lockedUntil: now + LOCK_TIMEOUT_MS });
    const mine = () => {
      const entry = this.entries.get(id);
      return entry?.owner === owner && !entry.response ? entry : undefined;
    };
    return Promise.resolve({
      kind: "acquired",
      lease: {
        complete: (response) => {
          const entry = mine();
          if (entry) entry.response = response;
          return Promise.resolve();
        },
        release: () => {
          if (mine()) this.entries.delete(id);
          return Promise.resolve();
        },
      },
    });
  }

  removeExpired(): Promise<number> {
    let removed = 0;
    for (const [id, entry] of this.entries) {
      if (entry.created < this.now() - RETENTION_MS) {
        this.entries.delete(id);
        removed++;
      }
    }
    return Promise.resolve(removed);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
