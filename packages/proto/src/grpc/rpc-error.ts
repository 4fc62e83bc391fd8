import { status as GrpcStatus, Metadata } from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { anyPack, anyUnpack } from "@bufbuild/protobuf/wkt";
import { ErrorDetailSchema, RpcStatusSchema, type ErrorDetail } from "../gen/rms/v1/errors_pb.js";

/** Trailer that carries a google.rpc.Status-shaped message (gRPC convention). */
export const STATUS_DETAILS_KEY = "grpc-status-details-bin";

export type ErrorFields = Pick<ErrorDetail, "type" | "code" | "message"> & { param?: string };

/**
 * An RPC failure with a gRPC status code and the structured rms.v1.ErrorDetail.
 * Core throws these; clients receive them back as the same class.
 */
export class RpcError extends Error {
  readonly grpcCode: GrpcStatus;
  readonly type: string;
  readonly code: string;
  readonly param: string | undefined;

  constructor(grpcCode: GrpcStatus, fields: ErrorFields) {
    super(fields.message);
    this.name = "RpcError";
    this.grpcCode = grpcCode;
    this.type = fields.type;
    this.code = fields.code;
    this.param = fields.param || undefined;
  }

  /** Trailing metadata carrying the detail, for a grpc-js ServiceError. */
  toMetadata(): Metadata {
    const detail = create(ErrorDetailSchema, {
      type: this.type,
      code: this.code,
      param: this.param ?? "",
      message: this.message,
    });
    const status = create(RpcStatusSchema, {
      code: this.grpcCode,
      message: this.message,
      details: [anyPack(ErrorDetailSchema, detail)],
    });
    const metadata = new Metadata();
    metadata.set(STATUS_DETAILS_KEY, Buffer.from(toBinary(RpcStatusSchema, status)));
    return metadata;
  }

  /** Rebuilds an RpcError from a received status; undefined when no detail was attached. */
  static fromMetadata(grpcCode: GrpcStatus, metadata: Metadata | undefined): RpcError | undefined {
    const raw = metadata?.get(STATUS_DETAILS_KEY)[0];
    if (!(raw instanceof Buffer)) return undefined;
    try {
      const status = fromBinary(RpcStatusSchema, raw);
      for (const any of status.details) {
        const detail = anyUnpack(any, ErrorDetailSchema);
        if (detail) return new RpcError(grpcCode, detail);
      }
    } catch {
      // A malformed trailer is treated as no detail at all.
    }
    return undefined;
  }
}

/**
 * A failure reported by the gRPC library itself (deadline, connection refused or lost),
 * not by the server: no detail came back, so the server may never have seen the call,
 * or may have handled it without the answer arriving.
 */
export class TransportError extends RpcError {
  constructor(grpcCode: GrpcStatus, fields: ErrorFields) {
    super(grpcCode, fields);
    this.name = "TransportError";
  }

  /** The call's deadline passed before any answer came (DEADLINE_EXCEEDED): the server may be up but slow. */
  get deadlineExceeded(): boolean {
    return this.grpcCode === GrpcStatus.DEADLINE_EXCEEDED;
  }
}

/** True when a value is a grpc-js ServiceError-like object. */
export function isServiceError(err: unknown): err is Error & { code: GrpcStatus; details: string; metadata?: Metadata } {
  return err instanceof Error && typeof (err as { code?: unknown }).code === "number" && "details" in err;
}
