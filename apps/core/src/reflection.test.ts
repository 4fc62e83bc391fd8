// Server reflection as grpcurl uses it: the descriptors core serves carry the comments of proto/.
import { fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestCore, type TestCore } from "./testutil/harness.js";
import { reflect } from "./testutil/reflection.js";

let t: TestCore;
beforeAll(async () => {
  t = await startTestCore();
});
afterAll(() => t.stop());

/** The leading comments of the file that defines `symbol`, as reflection serves it. */
async function commentsOf(symbol: string): Promise<string[]> {
  const reply = await reflect(t.core.address, { fileContainingSymbol: symbol });
  expect(reply.errorResponse).toBeUndefined();
  const files = reply.fileDescriptorResponse!.fileDescriptorProto.map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes));
  return files.flatMap((file) => file.sourceCodeInfo?.location.map((l) => l.leadingComments) ?? []).filter(Boolean);
}

it("serves the proto comments of our services and messages", async () => {
  const comments = await commentsOf("rms.v1.ResourceService");
  expect(comments.join("\n")).toContain("ResourceService owns resources: the primary unit of data.");
  expect(comments.join("\n")).toContain("ids sort by creation time.");
  expect((await commentsOf("rms.v1.AdminService")).length).toBeGreaterThan(0);
});
