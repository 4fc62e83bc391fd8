import { byteCount, positiveInt } from "@rms/config";
import { z } from "zod";
import { DEFAULT_RETRY_SCHEDULE, parseRetrySchedule } from "./webhooks/schedule.js";
import { parseMasterKey, type Keyring } from "./webhooks/secret.js";

// The launcher generates the development key with the same rule core reads it by.
export { newMasterKeyText, type MasterKey } from "./webhooks/secret.js";

/**
 * The behaviour settings core and the workers share (CONTRACT.md section 9, in ../shared/docs/): read once from
 * the environment by each process's config, handed to the domains and worker tasks as one value.
 */
export interface CoreSettings {
  /** Seals and opens webhook endpoint secrets (RMS_SECRET_KEY); null when unset: endpoints cannot be created. */
  readonly secretKeyring: Keyring | null;
  /** WEBHOOK_ALLOW_PRIVATE=true: `http://` and loopback/private webhook urls (development and tests only). */
  readonly webhookAllowPrivate: boolean;
  /** Delays before the 2nd, 3rd, ... delivery attempt, in ms (WEBHOOK_RETRY_SCHEDULE). */
  readonly webhookRetrySchedule: readonly number[];
  /** How many jobs of one account and mode may run at once (JOBS_PER_ACCOUNT). */
  readonly jobsPerAccount: number;
  /** How many unfinished (queued or running) jobs one account and mode may have (JOBS_QUEUED_PER_ACCOUNT): the next create is `limit_exceeded`. */
  readonly jobsQueuedPerAccount: number;
  /** How long a worker's claim on a job lasts without a heartbeat (JOBS_LEASE_MS): a job whose worker died is taken over after this. */
  readonly jobsLeaseMs: number;
  /** Deliveries of one webhook endpoint in flight at once, across every worker (WEBHOOK_ENDPOINT_CONCURRENCY). */
  readonly webhookEndpointConcurrency: number;
  /** Events one `recover` call schedules at most (CONTRACT.md section 7: 10,000); not a variable, tests lower it. */
  readonly webhookRecoverMax: number;
  /** A streamed upload's writing lease (FILES_WRITE_LEASE_MS): its bytes are reclaimed this long after its writer stopped renewing it. */
  readonly filesWriteLeaseMs: number;
  /** How often core sweeps the bytes no file or pending part owns (FILES_SWEEP_INTERVAL_MS). */
  readonly filesSweepIntervalMs: number;
  /** Bytes of files and pending parts one account may store per mode (FILES_QUOTA_BYTES); past it an upload is `limit_exceeded`. */
  readonly filesQuotaBytes: number;
}

export const DEFAULT_JOBS_PER_ACCOUNT = 2;
export const DEFAULT_JOBS_QUEUED_PER_ACCOUNT = 100;
export const DEFAULT_JOBS_LEASE_MS = 30_000;
export const DEFAULT_WEBHOOK_ENDPOINT_CONCURRENCY = 4;
/** Above this, one endpoint's deliveries would be most of a worker's slots (worker/tasks/deliveries.ts). */
export const MAX_WEBHOOK_ENDPOINT_CONCURRENCY = 64;
export const DEFAULT_WEBHOOK_RECOVER_MAX = 10_000;
/** 10 minutes: a streamed write renews it every minute while its writer is alive (storage/byte-store.ts). */
export const DEFAULT_FILES_WRITE_LEASE_MS = 10 * 60 * 1000;
export const DEFAULT_FILES_SWEEP_INTERVAL_MS = 60_000;
/** 10 GiB (CONTRACT.md section 11): fits the embedded database's disk beside a few accounts. */
export const DEFAULT_FILES_QUOTA_BYTES = 10 * 1024 ** 3;

export const DEFAULT_SETTINGS: CoreSettings = {
  secretKeyring: null,
  webhookAllowPrivate: false,
  webhookRetrySchedule: parseRetrySchedule(DEFAULT_RETRY_SCHEDULE),
  jobsPerAccount: DEFAULT_JOBS_PER_ACCOUNT,
  jobsQueuedPerAccount: DEFAULT_JOBS_QUEUED_PER_ACCOUNT,
  jobsLeaseMs: DEFAULT_JOBS_LEASE_MS,
  webhookEndpointConcurrency: DEFAULT_WEBHOOK_ENDPOINT_CONCURRENCY,
  webhookRecoverMax: DEFAULT_WEBHOOK_RECOVER_MAX,
  filesWriteLeaseMs: DEFAULT_FILES_WRITE_LEASE_MS,
  filesSweepIntervalMs: DEFAULT_FILES_SWEEP_INTERVAL_MS,
  filesQuotaBytes: DEFAULT_FILES_QUOTA_BYTES,
};

/** A rule that runs `parse` and reports its error's message, so every process states a bad value the same way. */
function parsedBy<T>(parse: (text: string) => T) {
  return z.string().transform((text, ctx) => {
    try {
      return parse(text);
    } catch (error) {
      ctx.addIssue({ code: "custom", message: (error as Error).message });
      return z.NEVER;
    }
  });
}

/**
 * The settings' variables, by one rule each. Core's, the workers' and the launcher's config schemas
 * all include this shape, so a bad value stops `npm start` before anything starts, with the same line.
 */
export const settingsVariables = {
  RMS_SECRET_KEY: parsedBy((text) => parseMasterKey(text)).optional(),
  WEBHOOK_ALLOW_PRIVATE: z.enum(["true", "false"], "must be true or false").optional(),
  WEBHOOK_RETRY_SCHEDULE: parsedBy(parseRetrySchedule).optional(),
  JOBS_PER_ACCOUNT: positiveInt().optional(),
  JOBS_QUEUED_PER_ACCOUNT: positiveInt().optional(),
  JOBS_LEASE_MS: positiveInt().optional(),
  WEBHOOK_ENDPOINT_CONCURRENCY: positiveInt()
    .refine((n) => n <= MAX_WEBHOOK_ENDPOINT_CONCURRENCY, `must be at most ${MAX_WEBHOOK_ENDPOINT_CONCURRENCY}`)
    .optional(),
  FILES_WRITE_LEASE_MS: positiveInt().optional(),
  FILES_SWEEP_INTERVAL_MS: positiveInt().optional(),
  FILES_QUOTA_BYTES: byteCount().optional(),
};

type SettingsVariables = z.infer<z.ZodObject<typeof settingsVariables>>;

/** The settings from parsed variables; unset ones take their defaults. */
export function settingsFrom(variables: SettingsVariables): CoreSettings {
  return {
    secretKeyring: variables.RMS_SECRET_KEY ? { primary: variables.RMS_SECRET_KEY } : null,
    webhookAllowPrivate: variables.WEBHOOK_ALLOW_PRIVATE === "true",
    webhookRetrySchedule: variables.WEBHOOK_RETRY_SCHEDULE ?? DEFAULT_SETTINGS.webhookRetrySchedule,
    jobsPerAccount: variables.JOBS_PER_ACCOUNT ?? DEFAULT_JOBS_PER_ACCOUNT,
    jobsQueuedPerAccount: variables.JOBS_QUEUED_PER_ACCOUNT ?? DEFAULT_JOBS_QUEUED_PER_ACCOUNT,
    jobsLeaseMs: variables.JOBS_LEASE_MS ?? DEFAULT_JOBS_LEASE_MS,
    webhookEndpointConcurrency: variables.WEBHOOK_ENDPOINT_CONCURRENCY ?? DEFAULT_WEBHOOK_ENDPOINT_CONCURRENCY,
    webhookRecoverMax: DEFAULT_WEBHOOK_RECOVER_MAX,
    filesWriteLeaseMs: variables.FILES_WRITE_LEASE_MS ?? DEFAULT_FILES_WRITE_LEASE_MS,
    filesSweepIntervalMs: variables.FILES_SWEEP_INTERVAL_MS ?? DEFAULT_FILES_SWEEP_INTERVAL_MS,
    filesQuotaBytes: variables.FILES_QUOTA_BYTES ?? DEFAULT_FILES_QUOTA_BYTES,
  };
}
