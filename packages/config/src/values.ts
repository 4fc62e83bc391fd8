import { isIP } from "node:net";
import { z } from "zod";

/** A TCP port, 0 to 65535 (0: pick a free one), with its default. */
export const port = (fallback: number) =>
  z
    .string()
    .trim()
    .regex(/^\d{1,5}$/, "must be a port number")
    .transform(Number)
    .refine((n) => n <= 65535, "must be a port number")
    .default(fallback);

/** `host:port` or `[ipv6]:port`, as gRPC takes it. */
export const address = (fallback: string) =>
  z
    .string()
    .trim()
    .regex(/^[^\s:[\]]+:\d{1,5}$|^\[[0-9a-fA-F:.]+\]:\d{1,5}$/, "must be host:port")
    .default(fallback);

/** An internal credential (admin or gateway token): long enough not to be guessed. */
export const TOKEN_MIN_CHARS = 16;
export const token = () => z.string().min(TOKEN_MIN_CHARS, `must be at least ${TOKEN_MIN_CHARS} characters`);

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const logLevel = () => z.enum(LOG_LEVELS, `must be one of ${LOG_LEVELS.join(", ")}`).default("info");

export const mongoUri = () =>
  z
    .string()
    .trim()
    .regex(/^mongodb(\+srv)?:\/\/\S+$/, "must be a mongodb:// or mongodb+srv:// URI");

/** A MongoDB database name: 1-63 characters, none MongoDB forbids. */
export const databaseName = () =>
  z
    .string()
    .trim()
    .regex(/^[^/\\. "$*<>:|?]{1,63}$/, "must be a MongoDB database name")
    .default("rms");

/** A count of bytes: a positive integer up to 2^53 - 1 (a size may pass the 9 digits of positiveInt: 10 GiB). */
export const byteCount = () =>
  z
    .string()
    .trim()
    .regex(/^[1-9]\d{0,15}$/, "must be a positive number of bytes")
    .transform(Number)
    .refine((n) => Number.isSafeInteger(n), `must be at most ${Number.MAX_SAFE_INTEGER}`);

export const positiveInt = () =>
  z
    .string()
    .trim()
    .regex(/^[1-9]\d{0,8}$/, "must be a positive integer")
    .transform(Number);

/** True for 127.0.0.0/8, ::1 and localhost: the only addresses core serves plaintext gRPC on. */
export function isLoopbackAddress(address: string): boolean {
  const host = address
    .replace(/:\d+$/, "")
    .replace(/^\[(.*)\]$/, "$1")
    .toLowerCase();
  return host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** A file path (certificate, key): any non-empty value. */
export const filePath = () => z.string().trim().min(1, "must not be empty");

/** A comma-separated list of IP addresses (spaces allowed); empty means none. */
export const ipList = () =>
  z
    .string()
    .default("")
    .transform((value) =>
      value
        .split(",")
        .map((ip) => ip.trim())
        .filter((ip) => ip !== ""),
    )
    .refine((ips) => ips.every((ip) => isIP(ip) !== 0), "must be a comma-separated list of IP addresses");

/** Where the gateway keeps rate-limit buckets: its own memory, or MongoDB (shared by several gateways). */
export const rateLimitStore = () => z.enum(["memory", "mongodb"], "must be memory or mongodb").default("memory");
