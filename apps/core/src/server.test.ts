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
    const reply = await new Promise<any>((resolve, reject) =>
      client.Check({ service }, (err: Error | null, res: unknown) => (err ? reject(err) : resolve(res))),
    );
    expect(reply.status).toBe("SERVING");
  }
  client.close();
});

it("lists its services, health included, through server reflection (as grpcurl list does)", async () => {
  const reflectionProto = new URL("../../../node_modules/@grpc/reflection/build/proto/grpc/reflection/v1/reflection.proto", import.meta.url).pathname;
  const pkg = loadPackageDefinition(loadSync(reflectionProto)) as any;
  const client = new pkg.grpc.reflection.v1.ServerReflection(t.core.address, credentials.createInsecure());
  const ask = (request: object) =>
    new Promise<any>((resolve, reject) => {
      const call = client.ServerReflectionInfo();
      call.on("data", (reply: unknown) => {
        resolve(reply);
        call.end();
      });
      call.on("error", reject);
      call.write(request);
    });
  const listed = await ask({ listServices: "" });
  expect(listed.listServicesResponse.service.map((s: { name: string }) => s.name)).toEqual(
    expect.arrayContaining(["rms.v1.ResourceService", "rms.v1.AdminService", "grpc.health.v1.Health"]),
  );
  // The error detail type is resolvable, so generic tools can decode grpc-status-details-bin.
  const detail = await ask({ fileContainingSymbol: "rms.v1.ErrorDetail" });
  expect(detail.fileDescriptorResponse.fileDescriptorProto.length).toBeGreaterThan(0);
  client.close();
});
