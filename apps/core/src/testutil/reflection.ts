import { createRequire } from "node:module";
import { credentials, loadPackageDefinition, Metadata, type ChannelCredentials } from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";

type Reply = {
  listServicesResponse?: { service: { name: string }[] };
  fileDescriptorResponse?: { fileDescriptorProto: Buffer[] };
  errorResponse?: { errorMessage: string };
};

/** One request on grpc.reflection.v1 ServerReflectionInfo (as grpcurl makes them), and its reply; `via`: the channel's credentials and the call's metadata. */
export function reflect(
  address: string,
  request: { listServices: string } | { fileContainingSymbol: string },
  via: { credentials?: ChannelCredentials; metadata?: Record<string, string> } = {},
): Promise<Reply> {
  const protoFile = createRequire(import.meta.url).resolve("@grpc/reflection/build/proto/grpc/reflection/v1/reflection.proto");
  // biome-ignore lint/suspicious/noExplicitAny: a package loaded from a .proto at run time has no static type.
  const pkg = loadPackageDefinition(loadSync(protoFile)) as any;
  const client = new pkg.grpc.reflection.v1.ServerReflection(address, via.credentials ?? credentials.createInsecure());
  const metadata = new Metadata();
  for (const [key, value] of Object.entries(via.metadata ?? {})) metadata.set(key, value);
  return new Promise((resolve, reject) => {
    const call = client.ServerReflectionInfo(metadata);
    call.on("data", (reply: Reply) => {
      resolve(reply);
      call.end();
    });
    call.on("error", (error: Error) => {
      client.close();
      reject(error);
    });
    call.on("end", () => client.close());
    call.write(request);
  });
}
