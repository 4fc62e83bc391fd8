import type { DescFile } from "@bufbuild/protobuf";
import { methodPath, type AnyService, type ServiceImplementation } from "@rms/proto";
import type { Db } from "mongodb";
import type { Logger } from "pino";
import type { PresentedKeyCheck } from "./grpc/define-rpc.js";
import type { Faults } from "./faults.js";
import type { BuiltInName } from "./clients/built-in.js";
import type { CoreSettings } from "./settings.js";

/** What core hands every domain when it opens it over the database. */
export interface DomainContext {
  readonly db: Db;
  readonly logger: Logger;
  readonly faults: Faults;
  /** The presented-key check of calls made on behalf of a public request (accounts/presented-key.ts). */
  readonly checkKey: PresentedKeyCheck;
  /** Tells the event relay which document a write just changed (storage/relay.ts); never waits. */
  readonly written: (collection: string, id: string) => void;
  /**
   * Relays one document's pending events now, fan-out included, and resolves once they are in `events`: for a
   * write that must not leave its document's events behind (a hard delete). Core always gives it.
   */
  readonly relayNow?: (collection: string, id: string) => Promise<void>;
  /** Behaviour settings from the environment (settings.ts). */
  readonly settings: CoreSettings;
}

/** The built-in clients allowed each method of a service: one row per method, a missing method does not compile. */
export type MethodCallers<S> = { readonly [K in keyof ServiceImplementation<S>]: readonly BuiltInName[] };

/** A service a domain serves and which built-in clients may call each of its methods (clients/built-in.ts). */
export interface ServiceEntry {
  readonly service: AnyService;
  /** By gRPC path (`/rms.v1.Service/Method`). */
  readonly callers: Readonly<Record<string, readonly BuiltInName[]>>;
}

export function serviceEntry<S extends AnyService>(service: S, callers: MethodCallers<S>): ServiceEntry {
  const byLocalName = callers as Readonly<Record<string, readonly BuiltInName[]>>;
  return { service, callers: Object.fromEntries(service.methods.map((m) => [methodPath(m), byLocalName[m.localName] ?? []])) };
}

/** A service's handlers, with the descriptor they implement (their pairing checked here, by type). */
export interface BoundService {
  readonly service: AnyService;
  readonly implementation: ServiceImplementation<AnyService>;
}

export function implement<S extends AnyService>(service: S, implementation: ServiceImplementation<S>): BoundService {
  return { service, implementation: implementation as ServiceImplementation<AnyService> };
}

/** A domain opened over one database: its indexes and its handlers. */
export interface OpenDomain {
  /** Declares every index the domain's queries and retention use (idempotent: an existing index is kept). */
  ensureIndexes(): Promise<void>;
  /** One per entry of the domain's `services`. */
  readonly implementations: readonly BoundService[];
  /** Background work core runs while it serves (the files' sweep), started after the indexes; answers its stop. */
  readonly start?: () => () => Promise<void>;
}

/**
 * One object kind (or family of them) as core serves it: its proto files (reflection), its
 * services with their permission rows, and how to open it. core's server registers services,
 * indexes, health names, reflection and permissions from the list in domains.ts, so adding a
 * kind is its folder plus one line there.
 */
export interface Domain {
  readonly name: string;
  readonly files: readonly DescFile[];
  readonly services: readonly ServiceEntry[];
  /** Collections whose documents carry an outbox, for the relay's sweep (storage/relay.ts). */
  readonly outboxes?: readonly string[];
  open(context: DomainContext): OpenDomain;
}

/** The built-in clients of a method that both the operator and the gateway call. */
export const OPERATOR_AND_GATEWAY: readonly BuiltInName[] = ["operator", "gateway"];

/** What a one-service domain builds when opened: its handlers and what declares its indexes (usually its store). */
export interface OpenService<S extends AnyService> {
  readonly implementation: ServiceImplementation<S>;
  readonly indexes: { ensureIndexes(): Promise<void> };
  /** Background work core runs while it serves (see OpenDomain). */
  readonly start?: () => () => Promise<void>;
}

/** A domain that serves one service, declared by its own lines only (see `serviceDomain`). */
export interface ServiceDomainSpec<S extends AnyService> {
  readonly name: string;
  readonly service: S;
  /** Which built-in clients may call each method; a missing method does not compile. */
  readonly callers: MethodCallers<S>;
  /** Collections whose documents carry an outbox, for the relay's sweep (storage/relay.ts). */
  readonly outboxes?: readonly string[];
  open(context: DomainContext): OpenService<S>;
}

/**
 * The usual domain: one service, reflected from the proto file that declares it, with its callers' rows,
 * its outboxes, and an `open` that builds the store and the handlers.
 */
export function serviceDomain<S extends AnyService>(spec: ServiceDomainSpec<S>): Domain {
  const { name, service, callers, outboxes } = spec;
  return {
    name,
    files: [service.file],
    services: [serviceEntry(service, callers)],
    ...(outboxes === undefined ? {} : { outboxes }),
    open(context) {
      const { implementation, indexes, start } = spec.open(context);
      return { ensureIndexes: () => indexes.ensureIndexes(), implementations: [implement(service, implementation)], ...(start ? { start } : {}) };
    },
  };
}
