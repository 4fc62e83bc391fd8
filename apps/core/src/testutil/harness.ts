import { AdminService, EventService, KeyKind, ResourceService, WebhookEndpointService, createClient } from "@rms/proto";
import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import { inject } from "vitest";
import { startCore, type CoreOptions, type RunningCore } from "../server.js";

export const ADMIN_TOKEN = "test-admin-token-0123456789";

/** A core on a free port over this test file's own database, with typed clients. */
/** `relay`: off by default, so tests can look at the outbox a write filled; the relay has its own tests. */
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
  const admin = createClient(AdminService, core.address, auth);
  const resources = createClient(ResourceService, core.address, auth);
  const events = createClient(EventService, core.address, auth);
  const webhookEndpoints = createClient(WebhookEndpointService, core.address, auth);

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
    admin,
    resources,
    events,
    webhookEndpoints,
    newAccount,
    KeyKind,
    async stop() {
      admin.close();
      resources.close();
      events.close();
      webhookEndpoints.close();
      await core.mongo.db(databaseName).dropDatabase();
      await core.stop(1_000);
    },
  };
}

export type TestCore = Awaited<ReturnType<typeof startTestCore>>;
