import { isAbsolute, join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseStackConfig } from "./config.js";
import { certificatePath, operatorPorts } from "./start.js";

describe("what npm start prints", () => {
  it("the operator's ports with the defaults: core's gRPC and every process's /metrics", () => {
    expect(operatorPorts(parseStackConfig({}))).toBe(
      "operator: core gRPC (npx rms) at 127.0.0.1:50051; /metrics on 127.0.0.1: gateway 9464, core 9465, worker-1 9466",
    );
    expect(operatorPorts(parseStackConfig({ WORKERS: "3", METRICS_PORT: "0" }))).toBe(
      "operator: core gRPC (npx rms) at 127.0.0.1:50051; /metrics on 127.0.0.1: gateway a free port, core 9465, worker-1 9466, worker-2 9467, worker-3 9468",
    );
  });

  it("the certificate as an absolute path, whatever RMS_DATA_DIR was relative to", () => {
    expect(isAbsolute(certificatePath(".data"))).toBe(true);
    expect(certificatePath(".data")).toBe(join(process.cwd(), ".data", "tls", "cert.pem"));
  });
});
