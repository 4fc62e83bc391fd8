import { address, ConfigError, databaseName, mongoUri, parseEnvironment, token } from "@rms/config";
import { z } from "zod";

export { ConfigError };

/** Where `rms` finds core when neither CORE_ADDR nor --core says. */
export const DEFAULT_CORE_ADDR = "127.0.0.1:50051";

/** The operator commands' variables, by the rules core and gateway check them with (@rms/config). */
const schema = z.object({
  CORE_ADDR: address(DEFAULT_CORE_ADDR),
  RMS_ADMIN_TOKEN: token().optional(),
});

/** Checks the variables `rms accounts|keys` read; a bad one is a ConfigError naming it. */
export function checkOperatorEnvironment(env: Record<string, string | undefined>): void {
  parseEnvironment(schema, env);
}

/** What `rms migrate` reads: the database core uses, by the rules core reads them with. */
const databaseSchema = z.object({
  MONGODB_URI: mongoUri(),
  MONGODB_DATABASE: databaseName(),
});

/** The database `rms migrate` works on; a missing or bad variable is a ConfigError naming it. */
export function checkDatabaseEnvironment(env: Record<string, string | undefined>): { mongoUri: string; databaseName: string } {
  const parsed = parseEnvironment(databaseSchema, env);
  return { mongoUri: parsed.MONGODB_URI, databaseName: parsed.MONGODB_DATABASE };
}
