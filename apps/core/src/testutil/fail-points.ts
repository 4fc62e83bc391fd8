import type { MongoClient } from "mongodb";
import { MongoServerError } from "mongodb";
import { inject } from "vitest";
import { openClient } from "../storage/client-options.js";

/**
 * A client of the test database with an appName of its own, and the `failCommand` fail point scoped to it: a fault
 * armed here hits only the commands this client sends, never the test's other clients.
 */
export interface FailPointClient {
  readonly client: MongoClient;
  /**
   * Arms `failCommand` for this client's commands (`data` without `appName`). False when the server at MONGODB_URI
   * takes no fail points (not started with test commands): the caller skips, saying so.
   */
  arm(mode: unknown, data: object): Promise<boolean>;
  off(): Promise<void>;
  close(): Promise<void>;
}

export async function failPointClient(name: string): Promise<FailPointClient> {
  const appName = `${name}-${process.pid}`;
  const client = await openClient(`${inject("mongoUri")}&appName=${appName}`).connect();
  const command = (mode: unknown, data: object = {}) => client.db("admin").command({ configureFailPoint: "failCommand", mode, data });
  return {
    client,
    arm: async (mode, data) => {
      const armed = await command(mode, { ...data, appName }).catch((error: unknown) => error);
      if (armed instanceof MongoServerError && !inject("mongoStartedHere")) {
        console.log(`[skipped: the server at MONGODB_URI does not take fail points: ${armed.message}]`);
        return false;
      }
      if (armed instanceof Error) throw armed;
      return true;
    },
    off: async () => {
      await command("off");
    },
    close: () => client.close(),
  };
}
