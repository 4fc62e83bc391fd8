import { Client, Metadata, credentials } from "@grpc/grpc-js";
import { AdminService, ResourceService, createClient, type ServiceClient } from "@rms/proto";

/** Deadline of one call to core. */
export const CORE_CALL_TIMEOUT_MS = 10_000;
/** Deadline of the health check behind GET /v1/status. */
export const HEALTH_TIMEOUT_MS = 1_000;

export type ServingStatus = "SERVING" | "NOT_SERVING" | "UNKNOWN";

/** What the gateway needs from core; tests may pass fakes. */
export interface CoreClients {
  readonly resources: ServiceClient<typeof ResourceService>;
  readonly admin: ServiceClient<typeof AdminService>;
  /** grpc.health.v1.Health/Check for the whole server (service ""); rejects when core is unreachable. */
  health(timeoutMs: number, requestId?: string): Promise<ServingStatus>;
  close(): void;
}

const HEALTH_CHECK_PATH = "/grpc.health.v1.Health/Check";
const SERVING_STATUS: Record<number, ServingStatus> = { 1: "SERVING", 2: "NOT_SERVING" };

/**
 * Decodes grpc.health.v1.HealthCheckResponse: `ServingStatus status = 1`, the
 * only field. Hand-rolled: one varint, no need for a generated type.
 */
export function decodeHealthResponse(bytes: Buffer): ServingStatus {
  let status = 0;
  for (let i = 0; i < bytes.length; ) {
    const tag = bytes[i++]!;
    if (tag !== 0x08) return "UNKNOWN"; // not field 1 / varint: not what we expect
    let value = 0;
    for (let shift = 0; i < bytes.length; shift += 7) {
      const byte = bytes[i++]!;
      value |= (byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) break;
    }
    status = value;
  }
  return SERVING_STATUS[status] ?? "UNKNOWN";
}

/** Clients of core's services, every call authenticated with the admin token. */
export function connectCore(address: string, adminToken: string): CoreClients {
  const options = { metadata: { authorization: `Bearer ${adminToken}` }, timeoutMs: CORE_CALL_TIMEOUT_MS };
  const resources = createClient(ResourceService, address, options);
  const admin = createClient(AdminService, address, options);
  const healthChannel = new Client(address, credentials.createInsecure());
  return {
    resources,
    admin,
    health(timeoutMs, requestId) {
      const metadata = new Metadata();
      if (requestId) metadata.set("rms-request-id", requestId);
      return new Promise((resolve, reject) => {
        healthChannel.makeUnaryRequest(
          HEALTH_CHECK_PATH,
          // HealthCheckRequest{service: ""} encodes as zero bytes.
          () => Buffer.alloc(0),
          (bytes: Buffer) => bytes,
          {},
          metadata,
          { deadline: Date.now() + timeoutMs },
          (error, response) => (error ? reject(error) : resolve(decodeHealthResponse(response ?? Buffer.alloc(0)))),
        );
      });
    },
    close() {
      resources.close();
      admin.close();
      healthChannel.close();
    },
  };
}
