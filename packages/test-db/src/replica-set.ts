import { MongoClient, MongoServerError } from "mongodb";

/** The name of the one-member replica set every local server runs as. */
export const REPLICA_SET = "rs0";

export interface MongodOptions {
  dataDir: string;
  port: number;
  /** WiredTiger's cache in GB (by default mongod takes half the machine's memory). */
  cacheSizeGB: number;
  replicaSet?: string;
}

/**
 * A `mongod` as production runs it, on one machine: a replica set (so majority writes, retryable
 * writes, change streams and transactions behave as they do there), journaled, on loopback only,
 * with a bounded cache so that several test runs, each with its own server, fit in memory.
 */
export function mongodArgs(options: MongodOptions): string[] {
  return [
    "--dbpath",
    options.dataDir,
    "--port",
    String(options.port),
    "--bind_ip",
    "127.0.0.1",
    "--replSet",
    options.replicaSet ?? REPLICA_SET,
    "--wiredTigerCacheSizeGB",
    String(options.cacheSizeGB),
    "--quiet",
  ];
}

/** Connection string of a local one-member set; without a database name (each user picks its own). */
export function replicaSetUri(port: number, replicaSet = REPLICA_SET): string {
  return `mongodb://127.0.0.1:${port}/?replicaSet=${replicaSet}`;
}

const NOT_YET_INITIALIZED = 94;

/**
 * Makes the server at `127.0.0.1:port` the primary of its one-member set: initiates a new data
 * directory, and re-points a kept one whose recorded address is another port (npm start takes a
 * free port when the default is busy). Resolves once it accepts writes.
 */
export async function ensurePrimary(port: number, timeoutMs: number, replicaSet = REPLICA_SET): Promise<void> {
  const host = `127.0.0.1:${port}`;
  const client = new MongoClient(`mongodb://${host}/?directConnection=true`, { serverSelectionTimeoutMS: timeoutMs });
  try {
    const admin = client.db("admin");
    const config = await admin.command({ replSetGetConfig: 1 }).catch((error: unknown) => {
      if (error instanceof MongoServerError && error.code === NOT_YET_INITIALIZED) return undefined;
      throw error;
    });
    if (!config) {
      await admin.command({ replSetInitiate: { _id: replicaSet, members: [{ _id: 0, host }] } });
    } else if (config["config"].members.length === 1 && config["config"].members[0].host !== host) {
      const next = { ...config["config"], version: config["config"].version + 1, members: [{ ...config["config"].members[0], host }] };
      await admin.command({ replSetReconfig: next, force: true });
    }
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hello = await admin.command({ hello: 1 });
      if (hello["isWritablePrimary"]) return;
      if (Date.now() > deadline) throw new Error(`the replica set ${replicaSet} elected no primary within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await client.close().catch(() => undefined);
  }
}

/** The server's own version (`buildInfo`), e.g. "6.0.5". */
export async function serverVersion(uri: string): Promise<string> {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 10_000 });
  try {
    return String((await client.db("admin").command({ buildInfo: 1 }))["version"]);
  } finally {
    await client.close().catch(() => undefined);
  }
}
