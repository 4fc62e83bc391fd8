import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import type { MethodDefinition, ServiceDefinition } from "@grpc/grpc-js";

/** The gRPC path of a method: `/package.Service/Method`. */
export function methodPath(method: DescMethod): string {
  return `/${method.parent.typeName}/${method.name}`;
}

/**
 * Turns a protobuf-es service descriptor into a grpc-js service definition,
 * keyed by the methods' local (lowerCamelCase) names. Serialization is
 * protobuf-es's binary format; nothing is loaded from .proto files at runtime.
 */
export function toServiceDefinition(service: DescService): ServiceDefinition {
  const definition: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const method of service.methods) {
    definition[method.localName] = {
      path: methodPath(method),
      requestStream: method.methodKind === "client_streaming" || method.methodKind === "bidi_streaming",
      responseStream: method.methodKind === "server_streaming" || method.methodKind === "bidi_streaming",
      requestSerialize: (value) => binary(toBinary(method.input, value as never)),
      requestDeserialize: (bytes: Buffer) => fromBinary(method.input, bytes),
      responseSerialize: (value) => binary(toBinary(method.output, value as never)),
      responseDeserialize: (bytes: Buffer) => fromBinary(method.output, bytes),
      originalName: method.name,
    };
  }
  return definition as ServiceDefinition;
}

/** A Buffer over the serialized message's memory: grpc-js copies it into its frame, so a copy here is garbage only. */
export function binary(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
