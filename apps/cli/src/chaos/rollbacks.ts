// What the replica set's members rolled back during `npm run chaos -- --cluster`: a member that comes back from a
// freeze or a kill with writes no majority had undoes them and keeps each undone document in
// `<dbpath>/rollback/<collection uuid>/removed.<time>.bson`. With majority writes none of them was acknowledged:
// the count of rolled-back documents of acknowledged creates that are missing now must be 0.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { RunningReplicaSet } from "@rms/test-db";
import { BSON, MongoClient } from "mongodb";

export interface Rollbacks {
  files: number;
  documents: number;
  /** Documents by namespace (`db.collection`), or by the directory's name when no collection has that uuid now. */
  documentsByCollection: Record<string, number>;
  /** Rolled-back resources whose id an acknowledged create answered with and that are not in the database now: acknowledged writes lost. */
  acknowledgedLost: number;
  /** Rolled-back resources whose id was acknowledged and which are there now (an unacknowledged later update of them was undone). */
  acknowledgedPresent: number;
}

/** The documents of one rollback file (a sequence of BSON documents). */
function documentsOf(file: string): BSON.Document[] {
  const bytes = readFileSync(file);
  const docs: BSON.Document[] = [];
  for (let at = 0; at + 4 <= bytes.length; ) {
    const length = bytes.readInt32LE(at);
    if (length < 5 || at + length > bytes.length) break;
    docs.push(BSON.deserialize(bytes.subarray(at, at + length)));
    at += length;
  }
  return docs;
}

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** Reads every member's rollback directory and sorts what it finds against the acknowledged creates. */
export async function countRollbacks(set: RunningReplicaSet, databaseName: string, acknowledgedIds: ReadonlySet<string>): Promise<Rollbacks> {
  const client = await new MongoClient(set.uri).connect();
  try {
    // The rollback directories are named by collection uuid.
    const namespaces = new Map<string, string>();
    const { databases } = await client.db("admin").admin().listDatabases({ nameOnly: true });
    for (const { name } of databases) {
      for (const info of await client.db(name).listCollections({}, { nameOnly: false }).toArray()) {
        const uuid = (info as { info?: { uuid?: BSON.UUID } }).info?.uuid;
        if (uuid) namespaces.set(uuid.toHexString(true), `${name}.${info.name}`);
      }
    }
    const result: Rollbacks = { files: 0, documents: 0, documentsByCollection: {}, acknowledgedLost: 0, acknowledgedPresent: 0 };
    const resources = client.db(databaseName).collection<{ _id: string }>("resources");
    for (const member of set.members) {
      for (const file of filesUnder(join(member.dbPath, "rollback"))) {
        const directory = file.split("/").at(-2)!;
        const namespace = namespaces.get(directory) ?? [...namespaces.entries()].find(([uuid]) => file.includes(uuid))?.[1] ?? directory;
        const docs = documentsOf(file);
        result.files++;
        result.documents += docs.length;
        result.documentsByCollection[namespace] = (result.documentsByCollection[namespace] ?? 0) + docs.length;
        if (namespace !== `${databaseName}.resources`) continue;
        for (const doc of docs) {
          const id = String(doc["_id"]);
          if (!acknowledgedIds.has(id)) continue;
          if (await resources.findOne({ _id: id }, { projection: { _id: 1 } })) result.acknowledgedPresent++;
          else result.acknowledgedLost++;
        }
      }
    }
    return result;
  } finally {
    await client.close();
  }
}
