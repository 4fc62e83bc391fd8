import { credentials, loadPackageDefinition } from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import { protoPath as healthProtoPath } from "grpc-health-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestCore, type TestCore } from "./testutil/harness.js";

let t: TestCore;
beforeAll(async () => {
  t = await startTestCore();
});
afterAll(() => t.stop());

it("answers grpc.health.v1 checks without the admin token", async () => {
  const pkg = loadPackageDefinition(loadSync(healthProtoPath, { enums: String })) as any;
  const client = new pkg.grpc.health.v1.Health(t.core.address, credentials.createInsecure());
  for (const service of ["", "rms.v1.ResourceService"]) {
    const reply = await new Promise<any>((resolve, reject) => client.Check({ service }, (err: Error | null, res: unknown) => (err ? reject(err) : resolve(res))));
    expect(reply.status).toBe("SERVING");
  }
  client.close();
});
