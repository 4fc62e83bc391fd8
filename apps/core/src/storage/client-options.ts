import { MongoClient, type MongoClientOptions } from "mongodb";

/**
 * The options of every MongoClient core and the workers open (server.ts, worker/run.ts), so both write
 * and read as production does (CONTRACT.md section 10, "Durability", in ../shared/docs/):
 *
 * - Writes are acknowledged only once a majority of the replica set has them in its journal, so the
 *   death of any process, `mongod` included, or a failover loses no write the API acknowledged. No
 *   operation in core overrides it (no `w: 0` or `w: 1` anywhere).
 * - Retryable writes and reads: a write or read cut by a failover or a dropped connection is sent again
 *   once, to the new primary; core's writes are safe to repeat (ids made before the write, versioned
 *   updates, inserts under unique keys).
 * - Reads go to the primary, so a caller reads its own writes (and every later write decided from a
 *   read is checked against the primary's state by its version or lease filter).
 * - Read concern `local`, on purpose: a versioned update or a lease claim decides from a read and then
 *   writes only if the document is unchanged; a `majority` read can lag the primary's newest writes, and
 *   such loops would then lose their race again and again until the majority caught up. What a stale
 *   primary answers before it steps down cannot be acknowledged to its writer (majority write concern),
 *   and every write decided from it fails its version or epoch filter on the new primary.
 *   The reads whose result is a resource request's answer (retrieve, list, search) are `majority` instead
 *   (resources/store.ts): no answer shows a write a cut-off primary took and then rolled back.
 * - Short server-selection and connect limits: a call fails fast (UNAVAILABLE, or a job's transient
 *   retry) instead of hanging while no primary answers.
 */
export const CLIENT_OPTIONS = {
  writeConcern: { w: "majority", journal: true },
  retryWrites: true,
  retryReads: true,
  readPreference: "primary",
  readConcern: { level: "local" },
  serverSelectionTimeoutMS: 2_000,
  connectTimeoutMS: 2_000,
  // Command events feed the database metrics (metrics.ts).
  monitorCommands: true,
} as const satisfies MongoClientOptions;

/**
 * The options as a fresh object (the driver may keep a reference to what it is given). `weakWrites`: write
 * concern 1, only for the chaos run's deliberately weakened build (faults.ts, `writes.w1`).
 */
export function clientOptions(weakWrites = false): MongoClientOptions {
  return {
    ...CLIENT_OPTIONS,
    writeConcern: weakWrites ? { w: 1, journal: true } : { ...CLIENT_OPTIONS.writeConcern },
    readConcern: { ...CLIENT_OPTIONS.readConcern },
  };
}

/** The durability settings a client ended up with, the URI's options and ours merged by the driver. */
export function durabilityOf(client: MongoClient) {
  return {
    w: client.writeConcern?.w,
    journal: client.writeConcern?.journal,
    retryWrites: client.options.retryWrites,
    retryReads: client.options.retryReads,
    readPreference: client.readPreference.mode,
    readConcern: client.readConcern?.level,
  };
}

const REQUIRED = {
  w: CLIENT_OPTIONS.writeConcern.w,
  journal: CLIENT_OPTIONS.writeConcern.journal,
  retryWrites: CLIENT_OPTIONS.retryWrites,
  retryReads: CLIENT_OPTIONS.retryReads,
  readPreference: CLIENT_OPTIONS.readPreference,
  readConcern: CLIENT_OPTIONS.readConcern.level,
};

/**
 * A client with CLIENT_OPTIONS (not yet connected). The driver lets some options of the URI win over the
 * ones given here (`journal=false` does), so a URI that would change any of them is refused with the
 * settings it changed, rather than run with weaker writes than the API promises.
 */
export function openClient(uri: string, weakWrites = false): MongoClient {
  const client = new MongoClient(uri, clientOptions(weakWrites));
  const actual = durabilityOf(client);
  const required: Record<keyof typeof REQUIRED, unknown> = { ...REQUIRED, ...(weakWrites ? { w: 1 } : {}) };
  const changed = (Object.keys(REQUIRED) as (keyof typeof REQUIRED)[]).filter((key) => actual[key] !== required[key]);
  if (changed.length > 0) {
    throw new Error(
      `the MongoDB URI changes ${changed.map((key) => `${key} (${String(actual[key])}, required ${String(required[key])})`).join(", ")}: remove those ` +
        `options from it`,
    );
  }
  return client;
}
