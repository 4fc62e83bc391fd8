import type { z } from "zod";

/** A configuration problem; the message is one line naming the variable. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/**
 * Validates an environment against a schema of variables. Empty values count as
 * unset (shells and launchers often pass `VAR=`). The first problem becomes a
 * ConfigError: `<VARIABLE> is required` or `<VARIABLE> <rule's message>`.
 */
export function parseEnvironment<Schema extends z.ZodType>(schema: Schema, env: Readonly<Record<string, string | undefined>>): z.infer<Schema> {
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ""));
  const result = schema.safeParse(present);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const variable = String(issue.path[0] ?? "environment");
  const message = issue.code === "invalid_type" && present[variable] === undefined ? "is required" : issue.message;
  throw new ConfigError(`${variable} ${message}`.replace(/\s+/g, " "));
}
