import { AdminService, EventService, KeyKind, ResourceService, WebhookEndpointService, createClient, type AnyService, type ServiceClient } from "@rms/proto";
import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import { afterAll, beforeAll, inject } from "vitest";
import { DOMAINS } from "../domains.js";
import { startCore, type CoreOptions, type RunningCore } from "../server.js";

export const ADMIN_TOKEN = "test-admin-token-0123456789";

/**
 * A core on a free port over this test file's own database, with a client of every service its domain list
 * serves (`client(JobService)`; a new kind's service is there without an edit here). `relay`: off by
 * default, so tests can look at the outbox a write filled; the relay has its own tests.
 */
export async function startTestCore({ relay = false, settings }: { relay?: boolean; settings?: CoreOptions["settings"] } = {}) {
  const databaseName = testDatabaseName("core");
  const core: RunningCore = await startCore({
    mongoUri: inject("mongoUri"),
    databaseName,
    adminToken: ADMIN_TOKEN,
    healthIntervalMs: 200,
    ...(relay ? {} : { relay: false as const }),
    ...(settings ? { settings } : {}),
  });
  const auth = { metadata: { authorization: `Bearer ${ADMIN_TOKEN}` } };
  const clients = new Map(DOMAINS.flatMap((domain) => domain.services).map(({ service }) => [service, createClient(service, core.address, auth)]));
  /** The admin-credential client of a service core serves. */
  function client<S extends AnyService>(service: S): ServiceClient<S> {
    const found = clients.get(service);
    if (!found) throw new Error(`no domain serves ${service.typeName}`);
    return found as unknown as ServiceClient<S>;
  }
  const admin = client(AdminService);

  /** A new account and its tenants in both modes. */
  async function newAccount() {
    const { account } = await admin.createAccount({});
    const id = account!.id;
    return { id, test: { accountId: id, livemode: false }, live: { accountId: id, livemode: true } };
  }

  return {
    core,
    /** This test file's database, for checking what was stored. */
    db: core.mongo.db(databaseName),
    client,
    // Shorthands of the services most tests call.
    admin,
    resources: client(ResourceService),
    events: client(EventService),
    webhookEndpoints: client(WebhookEndpointService),
    newAccount,
    KeyKind,
    async stop() {
      for (const open of clients.values()) open.close();
      await core.mongo.db(databaseName).dropDatabase();
      await core.stop(1_000);
    },
  };
}

export type TestCore = Awaited<ReturnType<typeof startTestCore>>;

/**
 * For a test file: `startTestCore(options)` before its tests and its stop after. The object is there at once and
 * is the test core once the file's tests run (its fields are filled in beforeAll), so tests read it as `t`.
 */
export function useTestCore(options: Parameters<typeof startTestCore>[0] = {}): TestCore {
  const t = {} as TestCore;
  let started: TestCore | undefined;
  beforeAll(async () => {
    started = await startTestCore(options);
    Object.assign(t, started);
  });
  afterAll(() => started?.stop());
  return t;
}
