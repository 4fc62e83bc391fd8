import type { DescMethodClientStreaming, DescMethodUnary } from "@bufbuild/protobuf";
import {
  FILE_PURPOSES,
  FILE_TYPES,
  UPLOADED_FILE_PURPOSES,
  filenameForType,
  idempotencyScopeId,
  FileService,
  type CallContext,
  type AdmitUploadRequest,
  type CancelUploadRequest,
  type CompleteUploadRequest,
  type CreateUploadRequest,
  type DeleteFileRequest,
  type GetFileRequest,
  type GetUploadRequest,
  type ListFilesRequest,
  type ServiceImplementation,
  type UploadFileStart,
  type UploadPartStart,
} from "@rms/proto";
import { afterCommit } from "../budget.js";
import { errors } from "../errors.js";
import { NO_FAULTS, type Faults } from "../faults.js";
import { found, rpc, type PresentedKeyCheck } from "../grpc/define-rpc.js";
import { tenantOf } from "../grpc/call-info.js";
import { pageOf } from "../grpc/list-request.js";
import { isId } from "../ids.js";
import { BlobTooLarge } from "../storage/byte-store.js";
import {
  FILENAME_MAX,
  UPLOAD_MAX_BYTES,
  fileView,
  type FileDocument,
  type FilePurpose,
  type FileType,
  type FileUsage,
  type PartDocument,
  type UploadDocument,
} from "./model.js";
import type { FileStore, NewFile } from "./store.js";
import { uploadStatus, type UploadStore } from "./uploads.js";

/** Most bytes of one `data` message of a read: 1 MiB, a quarter of gRPC's default message limit. */
const READ_MESSAGE_BYTES = 1024 * 1024;

function fileMessage(doc: Parameters<typeof fileView>[0]) {
  const view = fileView(doc);
  return {
    id: view.id,
    purpose: view.purpose,
    ...(view.filename === null ? {} : { filename: view.filename }),
    size: BigInt(view.size),
    type: view.type,
    sha256: view.sha256,
    created: BigInt(view.created),
    ...(view.expires_at === null ? {} : { expiresAt: BigInt(view.expires_at) }),
    livemode: view.livemode,
  };
}

function uploadMessage(doc: UploadDocument, file: FileDocument | null, nowMs = Date.now()) {
  return {
    id: doc._id,
    status: uploadStatus(doc, nowMs),
    bytes: BigInt(doc.bytes),
    filename: doc.filename,
    purpose: doc.purpose,
    type: doc.type,
    created: BigInt(doc.created),
    expiresAt: BigInt(doc.expires),
    ...(file === null ? {} : { file: fileMessage(file) }),
  };
}

function usageMessage(usage: FileUsage) {
  return { usedBytes: BigInt(usage.used), quotaBytes: BigInt(usage.quota) };
}

function partMessage(part: PartDocument) {
  return { id: part._id, uploadId: part.upload, size: BigInt(part.size), sha256: part.sha256, created: BigInt(part.created) };
}

function purposeOf(value: string, param = "purpose"): FilePurpose {
  if (!(FILE_PURPOSES as readonly string[]).includes(value))
    throw errors.invalid("parameter_invalid", `Invalid purpose: must be one of ${FILE_PURPOSES.join(", ")}.`, param);
  return value as FilePurpose;
}

/** Clients upload imports only; jobs make the other purposes, so a refusal names only what may be uploaded. */
function uploadPurposeOf(value: string): FilePurpose {
  if (value === "") throw errors.invalid("parameter_missing", "Missing required param: purpose.", "purpose");
  if ((UPLOADED_FILE_PURPOSES as readonly string[]).includes(value)) return value as FilePurpose;
  const allowed = UPLOADED_FILE_PURPOSES.map((p) => `'${p}'`).join(" or ");
  throw errors.invalid("parameter_invalid", `Invalid purpose: files are uploaded with purpose ${allowed} (jobs make the others).`, "purpose");
}

function typeOf(value: string): FileType {
  if (!(FILE_TYPES as readonly string[]).includes(value))
    throw errors.invalid("file_type_invalid", `Invalid file type: must be one of ${FILE_TYPES.join(", ")}.`, "type");
  return value as FileType;
}

function filenameOf(value: string | undefined, required: boolean): string | null {
  if (value === undefined || value === "") {
    if (required) throw errors.invalid("parameter_missing", "Missing required param: filename.", "filename");
    return null;
  }
  if ([...value].length > FILENAME_MAX) throw errors.invalid("string_too_long", `filename is at most ${FILENAME_MAX} characters.`, "filename");
  return value;
}

function fileIdOf(id: string, param = "id"): string {
  if (!isId("file", id)) throw errors.notFound("file", id.slice(0, 64), param);
  return id;
}

function uploadIdOf(id: string, param = "id"): string {
  if (!isId("upl", id)) throw errors.notFound("upload", id.slice(0, 64), param);
  return id;
}

/**
 * The FileService RPCs, declared (grpc/define-rpc.ts): the unary ones as rpc.read / rpc.write, the two uploads as
 * rpc.upload (exactly once under an Idempotency-Key by the same protocol as every write: grpc/idempotent.ts). The
 * download is a server stream: it checks the tenant and the presented key, then sends the bytes in 1 MiB messages.
 */
export function fileService(
  store: FileStore,
  uploads: UploadStore,
  checkKey: PresentedKeyCheck,
  maxBytes: () => number = () => UPLOAD_MAX_BYTES,
  faults: Faults = NO_FAULTS,
): ServiceImplementation<typeof FileService> {
  const declared = {
    // The purpose comes with the start, or with the end when the caller learnt it only after the bytes.
    uploadFile: rpc.upload({
      // Under a key, the file's document commits with the record of its answer, once its bytes are durable.
      atomic: true,
      parse: (start: UploadFileStart) => {
        const described: NewFile = { purpose: "resources_import", type: "jsonl", filename: null };
        if (start.purpose !== "") described.purpose = uploadPurposeOf(start.purpose);
        described.type = typeOf(start.type);
        const filename = filenameOf(start.filename, false);
        described.filename = filename === null ? null : filenameForType(filename, described.type);
        const limit = start.maxBytes > 0n ? Math.min(Number(start.maxBytes), maxBytes()) : maxBytes();
        return { described, purposeAtStart: start.purpose, limit };
      },
      end: (end, { described, purposeAtStart }) => {
        described.purpose = uploadPurposeOf(purposeAtStart || (end.purpose ?? ""));
      },
      async write({ described, limit }, bytes, { tenant, budget }) {
        // Within the tenant's quota, before a byte is read; a file that passes it on the way is cut there.
        const usage = await store.admit(tenant);
        const room = usage.quota - usage.used;
        try {
          const file = await store.createFromStream(tenant, described, bytes, { maxBytes: Math.min(limit, room), budget });
          // The fault point is the durable write: under a key, the commit of the file's document with its record.
          afterCommit(budget, () => faults.afterWrite("file.create"));
          return file;
        } catch (error) {
          if (error instanceof BlobTooLarge && room < limit) throw store.pastQuota(usage);
          if (error instanceof BlobTooLarge) throw errors.of("request_too_large", `A file is at most ${limit} bytes.`, "file");
          throw error;
        }
      },
      reply: (file) => ({ file: fileMessage(file) }),
    }),
    // A part sent again without a key is another part; under the same key, the first part's answer.
    uploadPart: rpc.upload({
      parse: (start: UploadPartStart) => ({ uploadId: uploadIdOf(start.uploadId), declared: start.bytes === undefined ? undefined : Number(start.bytes) }),
      write: ({ uploadId, declared }, bytes, { tenant }) => uploads.addPart(tenant, uploadId, bytes, declared),
      reply: (part) => ({ part: partMessage(part) }),
    }),
    getFile: rpc.read({
      parse: (request: GetFileRequest) => ({ id: fileIdOf(request.id) }),
      load: ({ id }, { tenant }) => store.find(tenant, id),
      reply: (doc, { id }) => ({ file: fileMessage(found(doc, "file", id)) }),
    }),
    listFiles: rpc.read({
      parse: (request: ListFilesRequest) => {
        const page = pageOf(request, "file", "file");
        const created: Record<string, number> = {};
        for (const key of ["gt", "gte", "lt", "lte"] as const) {
          const value = request.created?.[key];
          if (value !== undefined) created[key] = Number(value);
        }
        return { ...page, ...(request.purpose === "" ? {} : { purpose: purposeOf(request.purpose) }), created };
      },
      load: async (query, { tenant }) => {
        const [page, usage] = await Promise.all([store.list(tenant, query), store.usage(tenant)]);
        return { ...page, usage };
      },
      reply: (page) => ({ files: page.items.map(fileMessage), hasMore: page.hasMore, usage: usageMessage(page.usage) }),
    }),
    // A question asked before an upload, never kept under a key itself; an upload whose key has a record is the
    // record's to answer (a replay of a 201 must not meet today's quota).
    admitUpload: rpc.read({
      idempotency: "none",
      parse: (request: AdmitUploadRequest) => ({ bytes: request.bytes === undefined ? undefined : Number(request.bytes), key: request.idempotencyKey }),
      load: async ({ bytes, key }, { tenant }) => {
        if (key !== "" && (await checkKey.keyed?.records.has(idempotencyScopeId(tenant.account, tenant.livemode, key)))) return store.usage(tenant);
        return store.admit(tenant, bytes);
      },
      reply: (usage) => ({ usage: usageMessage(usage) }),
    }),
    deleteFile: rpc.write({
      parse: (request: DeleteFileRequest) => ({ id: fileIdOf(request.id) }),
      write: ({ id }, { tenant }) => store.delete(tenant, id),
      reply: (doc) => ({ id: doc._id }),
    }),
    createUpload: rpc.write({
      // Under a key, the upload's document commits with the record of its answer.
      atomic: true,
      parse: (request: CreateUploadRequest) => {
        const purpose = uploadPurposeOf(request.purpose);
        const named = filenameOf(request.filename, true) ?? "";
        if (request.bytes < 0n || request.bytes > BigInt(UPLOAD_MAX_BYTES)) {
          throw errors.invalid("parameter_invalid", `Invalid bytes: an upload is 0 to ${UPLOAD_MAX_BYTES} bytes (8 GiB).`, "bytes");
        }
        const type = typeOf(request.type);
        return { purpose, filename: filenameForType(named, type), bytes: Number(request.bytes), type };
      },
      write: (upload, { tenant, info, budget }) => uploads.create(tenant, upload, info.idempotencyKey, budget),
      reply: (doc) => ({ upload: uploadMessage(doc, null) }),
    }),
    getUpload: rpc.read({
      parse: (request: GetUploadRequest) => ({ id: uploadIdOf(request.id) }),
      load: ({ id }, { tenant }) => uploads.get(tenant, id),
      reply: async (doc) => ({ upload: uploadMessage(doc, doc.file === null ? null : await store.files.findOne({ _id: doc.file })) }),
    }),
    completeUpload: rpc.write({
      parse: (request: CompleteUploadRequest) => ({ id: uploadIdOf(request.id), partIds: request.partIds }),
      write: ({ id, partIds }, { tenant }) => uploads.complete(tenant, id, partIds),
      reply: ({ upload, file }) => ({ upload: uploadMessage(upload, file) }),
    }),
    cancelUpload: rpc.write({
      parse: (request: CancelUploadRequest) => ({ id: uploadIdOf(request.id) }),
      write: ({ id }, { tenant }) => uploads.cancel(tenant, id),
      reply: (doc) => ({ upload: uploadMessage(doc, null) }),
    }),
  };
  const streams: Pick<ServiceImplementation<typeof FileService>, "readFile"> = {
    async *readFile(request, context) {
      const tenant = tenantOf(context, request.tenant, request.id);
      const id = fileIdOf(request.id);
      const [file] = await Promise.all([store.find(tenant, id), checkKey(context, tenant)]);
      const doc = found(file, "file", id);
      const suffix = request.suffix === undefined ? undefined : Number(request.suffix);
      const start = suffix === undefined ? Number(request.start) : Math.max(doc.size - suffix, 0);
      const end = suffix !== undefined || request.end === undefined ? doc.size : Math.min(Number(request.end), doc.size);
      if (suffix === 0 && doc.size > 0) throw errors.of("range_not_satisfiable", "The range asks for the last 0 bytes.");
      if (start < 0 || (start >= doc.size && doc.size > 0) || (doc.size === 0 && start > 0) || end < start) {
        throw errors.of("range_not_satisfiable", `The range starts at ${start}; the file has ${doc.size} bytes.`);
      }
      yield { part: { case: "head" as const, value: { file: fileMessage(doc), start: BigInt(start), end: BigInt(end) } } };
      for await (const piece of store.read(doc, start, end)) {
        for (let at = 0; at < piece.length; at += READ_MESSAGE_BYTES)
          yield { part: { case: "data" as const, value: piece.subarray(at, at + READ_MESSAGE_BYTES) } };
      }
    },
  };
  const methods = FileService.method as unknown as Record<string, DescMethodUnary | DescMethodClientStreaming>;
  const handlers = Object.fromEntries(
    Object.entries(declared).map(([name, declaration]) => [
      name,
      (request: unknown, context: CallContext) =>
        (declaration as { run: (r: unknown, c: CallContext, k: PresentedKeyCheck, m: unknown) => Promise<unknown> }).run(
          request,
          context,
          checkKey,
          methods[name],
        ),
    ]),
  );
  return { ...handlers, ...streams } as unknown as ServiceImplementation<typeof FileService>;
}
