import { z } from "zod";
import { parseFaults, type Faults } from "./faults.js";

const schema = z.object({
  MONGODB_URI: z.string().regex(/^mongodb(\+srv)?:\/\//, "must be a mongodb:// or mongodb+srv:// URI"),
  MONGODB_DATABASE: z.string().regex(/^[A-Za-z0-9_-]{1,63}$/, "must be 1-63 letters, digits, _ or -").default("rms"),
  CORE_ADDR: z.string().regex(/^[^\s:]+:\d{1,5}$/, "must be host:port").default("127.0.0.1:50051"),
  RMS_ADMIN_TOKEN: z.string().min(16, "must be at least 16 characters"),
  RMS_FAULTS: z.string().optional(),
  CORE_METRICS_PORT: z.coerce.number({ message: "must be a port number" }).int("must be a port number").min(0, "must be a port number").max(65535, "must be a port number").default(9465),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
});

export type CoreConfig = {
  mongoUri: string;
  databaseName: string;
  address: string;
  adminToken: string;
  logLevel: z.infer<typeof schema>["LOG_LEVEL"];
  faults: Faults;
  /** Operator port of core's `GET /metrics`, on 127.0.0.1. */
  metricsPort: number;
};

/** A configuration error: its message is one line naming the variable. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Parses the environment once, at start-up. Nothing else reads process.env. */
export function parseCoreConfig(env: Record<string, string | undefined>): CoreConfig {
  const result = schema.safeParse(env);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const variable = String(issue.path[0] ?? "environment");
    const message = issue.code === "invalid_type" && env[variable] === undefined ? "is required" : issue.message;
    throw new ConfigError(`${variable} ${message}`);
  }
  const c = result.data;
  let faults: Faults;
  try {
    faults = parseFaults(c.RMS_FAULTS);
  } catch (error) {
    throw new ConfigError(`RMS_FAULTS ${(error as Error).message}`);
  }
  return { mongoUri: c.MONGODB_URI, databaseName: c.MONGODB_DATABASE, address: c.CORE_ADDR, adminToken: c.RMS_ADMIN_TOKEN, logLevel: c.LOG_LEVEL, faults, metricsPort: c.CORE_METRICS_PORT };
}
