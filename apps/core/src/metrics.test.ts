// Core's /metrics over real gRPC calls: conventional labels, every service counted, an exposition promtool accepts.
import { lintExposition } from "@rms/metrics-server";
import { AdminService, Health, bearerMetadata, createClient } from "@rms/proto";
import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { startCore, type RunningCore } from "./server.js";
import { ADMIN_TOKEN } from "./testutil/harness.js";
import { callLabels } from "./metrics.js";
import { reflect } from "./testutil/reflection.js";

let core: RunningCore;
const databaseName = testDatabaseName("core");
beforeAll(async () => {
  core = await startCore({ mongoUri: inject("mongoUri"), databaseName, adminToken: ADMIN_TOKEN, metricsPort: 0 });
});
afterAll(async () => {
  await core.mongo.db(databaseName).dropDatabase();
  await core.stop(1_000);
});

it("names series by service, short method, type, client and code name, counting health and reflection calls too", async () => {
  const health = createClient(Health, core.address, { timeoutMs: 5_000 });
  await health.check({ service: "" });
  health.close();
  const reply = await reflect(core.address, { listServices: "" });
  expect(reply.listServicesResponse?.service.map((s) => s.name)).toContain("rms.v1.ResourceService");
  const operator = createClient(AdminService, core.address, { metadata: bearerMetadata(ADMIN_TOKEN), timeoutMs: 5_000 });
  await operator.listAccounts({ limit: 1 });
  operator.close();

  const text = await (await fetch(`http://127.0.0.1:${core.metricsPort}/metrics`)).text();
  // Calls without a credential are the `anonymous` client's; the operator's token names the built-in `operator`.
  expect(text).toContain(
    'grpc_server_handled_total{grpc_type="unary",grpc_service="grpc.health.v1.Health",grpc_method="Check",client="anonymous",grpc_code="OK"} 1',
  );
  expect(text).toMatch(
    new RegExp(
      'grpc_server_handled_total\\{grpc_type="bidi_stream",grpc_service="grpc.reflection.v1.ServerReflection",' +
        'grpc_method="ServerReflectionInfo",client="anonymous",grpc_code="(OK|CANCELLED)"\\} 1',
    ),
  );
  expect(text).toContain('grpc_server_started_total{grpc_type="unary",grpc_service="grpc.health.v1.Health",grpc_method="Check",client="anonymous"} 1');
  expect(text).toMatch(/grpc_server_handling_seconds_count\{grpc_type="unary",grpc_service="grpc.health.v1.Health",grpc_method="Check",client="anonymous"\} 1/);
  expect(text).toContain(
    'grpc_server_handled_total{grpc_type="unary",grpc_service="rms.v1.AdminService",grpc_method="ListAccounts",client="operator",grpc_code="OK"} 1',
  );
  expect(lintExposition(text)).toEqual([]);
});

it("derives the labels from the method path and its streaming kind", () => {
  expect(callLabels("/rms.v1.ResourceService/CreateResource", false, false)).toEqual({
    grpc_type: "unary",
    grpc_service: "rms.v1.ResourceService",
    grpc_method: "CreateResource",
  });
  expect(callLabels("/grpc.health.v1.Health/Watch", false, true)).toMatchObject({ grpc_type: "server_stream", grpc_method: "Watch" });
  expect(callLabels("/a.B/C", true, false).grpc_type).toBe("client_stream");
  expect(callLabels("/a.B/C", true, true).grpc_type).toBe("bidi_stream");
});
