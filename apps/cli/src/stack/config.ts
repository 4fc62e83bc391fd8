import { z } from "zod";

const port = (fallback: number) =>
  z.coerce.number({ message: "must be a port number" }).int("must be a port number").min(0, "must be a port number").max(65535, "must be a port number").default(fallback);
const boolean = z.enum(["true", "false", "1", "0"], { message: "must be true or false" }).transform((v) => v === "true" || v === "1");
const duration = /^\d+(ms|s|m|h)$/;

/** Every variable of CONTRACT.md section 9 (../shared/docs/), checked before anything starts. */
const schema = z
  .object({
    MONGODB_URI: z.string().regex(/^mongodb(\+srv)?:\/\//, "must be a mongodb:// or mongodb+srv:// URI").optional(),
    PORT: port(8443),
    HTTP_PORT: port(8080),
    CORE_ADDR: z.string().regex(/^[^\s:]+:\d{1,5}$/, "must be host:port").default("127.0.0.1:50051"),
    METRICS_PORT: port(9464),
    CORE_METRICS_PORT: port(9465),
    TLS_CERT_FILE: z.string().min(1).optional(),
    TLS_KEY_FILE: z.string().min(1).optional(),
    TRUSTED_PROXIES: z.string().regex(/^[0-9A-Fa-f:.,\s]*$/, "must be a comma-separated list of IP addresses").optional(),
    RMS_ADMIN_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
    RMS_GATEWAY_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
    CORE_TLS_CERT_FILE: z.string().min(1).optional(),
    CORE_TLS_KEY_FILE: z.string().min(1).optional(),
    CORE_TLS_CA_FILE: z.string().min(1).optional(),
    WEBHOOK_ALLOW_PRIVATE: boolean.optional(),
    WEBHOOK_RETRY_SCHEDULE: z
      .string()
      .refine((v) => v.split(",").every((part) => duration.test(part.trim())), "must be comma-separated delays such as 5s,5m,2h")
      .optional(),
    RATE_LIMIT_LIVE: z.coerce.number({ message: "must be a positive number" }).positive("must be a positive number").optional(),
    RATE_LIMIT_TEST: z.coerce.number({ message: "must be a positive number" }).positive("must be a positive number").optional(),
    RATE_LIMIT_ADDRESS: z.coerce.number({ message: "must be a positive integer" }).int("must be a positive integer").positive("must be a positive integer").optional(),
    LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"], { message: "must be one of fatal, error, warn, info, debug, trace, silent" }).default("info"),
  })
  .superRefine((c, ctx) => {
    if (!!c.TLS_CERT_FILE !== !!c.TLS_KEY_FILE) {
      ctx.addIssue({ code: "custom", path: [c.TLS_CERT_FILE ? "TLS_KEY_FILE" : "TLS_CERT_FILE"], message: "must be set together with the other TLS file" });
    }
    const coreTls = ["CORE_TLS_CERT_FILE", "CORE_TLS_KEY_FILE", "CORE_TLS_CA_FILE"] as const;
    const missing = coreTls.find((name) => !c[name]);
    if (missing && coreTls.some((name) => c[name])) {
      ctx.addIssue({ code: "custom", path: [missing], message: "must be set together with the other CORE_TLS_ files" });
    }
  });

export type StackConfig = z.infer<typeof schema>;

export class StackConfigError extends Error {}

export function parseStackConfig(env: Record<string, string | undefined>): StackConfig {
  // Empty strings count as unset, as shells often export VAR= to clear a value.
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const result = schema.safeParse(present);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    throw new StackConfigError(`${String(issue.path[0])} ${issue.message}`);
  }
  return result.data;
}
