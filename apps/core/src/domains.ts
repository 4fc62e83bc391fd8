import type { Db } from "mongodb";
import type { Logger } from "pino";
import { accountsDomain } from "./accounts/domain.js";
import { dashboardSessionsDomain } from "./dashboard-sessions/domain.js";
import { presentedKeyCheck } from "./accounts/presented-key.js";
import { AccountStore } from "./accounts/store.js";
import type { Domain, DomainContext } from "./domain.js";
import type { Faults } from "./faults.js";
import type { PresentedKeyCheck } from "./grpc/define-rpc.js";
import type { BuiltInName } from "./clients/built-in.js";
import { IdempotencyRecords } from "./storage/idempotency-records.js";
import { eventsDomain } from "./events/domain.js";
import { filesDomain } from "./files/domain.js";
import { jobsDomain } from "./jobs/domain.js";
import { resourcesDomain } from "./resources/domain.js";
import { webhookEndpointsDomain } from "./webhook-endpoints/domain.js";
import { webhookDeliveriesDomain } from "./webhook-deliveries/domain.js";
import { DEFAULT_SETTINGS, type CoreSettings } from "./settings.js";

/**
 * Every domain core serves. The server registers their services, indexes, health names,
 * reflection files and permission rows from this list alone: a new object kind is its
 * folder (with a domain.ts) plus one line here.
 */
export const DOMAINS: readonly Domain[] = [
  resourcesDomain,
  accountsDomain,
  eventsDomain,
  jobsDomain,
  webhookEndpointsDomain,
  webhookDeliveriesDomain,
  filesDomain,
  dashboardSessionsDomain,
];

/**
 * Which built-in clients may call each method, by gRPC path, from the domains' rows: every method core serves
 * (a clients file may name only these; clients/file.ts).
 */
export const METHOD_CALLERS: Readonly<Record<string, readonly BuiltInName[]>> = Object.fromEntries(
  DOMAINS.flatMap((domain) => domain.services.flatMap((entry) => Object.entries(entry.callers))),
);

/** Every gRPC path core serves (`/rms.v1.ResourceService/GetResource`). */
export const SERVED_METHODS: ReadonlySet<string> = new Set(Object.keys(METHOD_CALLERS));

/** The names the health service answers for: the whole server ("") and each service. */
export const HEALTH_NAMES: readonly string[] = ["", ...DOMAINS.flatMap((d) => d.services.map((s) => s.service.typeName))];

/**
 * What the domains share when opened over one database. Their presented-key check carries core's idempotency
 * records (grpc/idempotent.ts): every declared RPC called under an Idempotency-Key runs exactly once through them.
 */
export function domainContext(
  db: Db,
  logger: Logger,
  faults: Faults,
  written: DomainContext["written"] = () => {},
  settings: CoreSettings = DEFAULT_SETTINGS,
): DomainContext {
  const keyed = { records: new IdempotencyRecords(db), keyring: settings.secretKeyring ?? null, logger, faults };
  const checkKey: PresentedKeyCheck = Object.assign(presentedKeyCheck(new AccountStore(db)), { keyed });
  return { db, logger, faults, checkKey, written, settings };
}

/** Every collection with an outbox, for the relay's sweep. */
export const OUTBOXES: readonly string[] = DOMAINS.flatMap((d) => d.outboxes ?? []);
