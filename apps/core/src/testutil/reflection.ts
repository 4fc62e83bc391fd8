import { createRequire } from "node:module";
import { credentials, loadPackageDefinition } from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";

type Reply = { listServicesResponse?: { service: { name: string }[] }; fileDescriptorResponse?: { fileDescriptorProto: Buffer[] }; errorResponse?: { errorMessage: string } };

/** One request on grpc.reflection.v1 ServerReflectionInfo (as grpcurl makes them), and its reply. */
export function reflect(address: string, request: { listServices: string } | { fileContainingSymbol: string }): Promise<Reply> {
  const protoFile = createRequire(import.meta.url).resolve("@grpc/reflection/build/proto/grpc/reflection/v1/reflection.proto");
  // biome-ignore lint/suspicious/noExplicitAny: a package loaded from a .proto at run time has no static type.
  const pkg = loadPackageDefinition(loadSync(protoFile)) as any;
  const client = new pkg.grpc.reflection.v1.ServerReflection(address, credentials.createInsecure());
  return new Promise((resolve, reject) => {
    const call = client.ServerReflectionInfo();
    call.on("data", (reply: Reply) => {
      resolve(reply);
      call.end();
    });
    call.on("error", reject);
    call.on("end", () => client.close());
    call.write(request);
  });
}
