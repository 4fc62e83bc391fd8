import {
  FILE_PURPOSES,
  FILE_TYPES,
  type FileService,
  type CallContext,
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
import { errors } from "../errors.js";
import { found, rpc, type PresentedKeyCheck } from "../grpc/define-rpc.js";
import { requestInfo, tenantOf } from "../grpc/call-info.js";
import { pageOf } from "../grpc/list-request.js";
import { isId } from "../ids.js";
import { BlobTooLarge } from "../storage/byte-store.js";
import { FILENAME_MAX, UPLOAD_MAX_BYTES, fileView, type FileDocument, type FilePurpose, type FileType, type PartDocument, type UploadDocument } from "./model.js";
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

function partMessage(part: PartDocument) {
  return { id: part._id, uploadId: part.upload, size: BigInt(part.size), sha256: part.sha256, created: BigInt(part.created) };
}

function purposeOf(value: string, param = "purpose"): FilePurpose {
  if (!(FILE_PURPOSES as readonly string[]).includes(value)) throw errors.invalid("parameter_invalid", `Invalid purpose: must be one of ${FILE_PURPOSES.join(", ")}.`, param);
  return value as FilePurpose;
}

/** Clients upload imports only; jobs make the other purposes. */
function uploadPurposeOf(value: string): FilePurpose {
  if (value === "") throw errors.invalid("parameter_missing", "Missing required param: purpose.", "purpose");
  const purpose = purposeOf(value);
  if (purpose !== "resources_import")
    throw errors.invalid("parameter_invalid", `Invalid purpose: only 'resources_import' files are uploaded; '${purpose}' files are made by jobs.`, "purpose");
  return purpose;
}

function typeOf(value: string): FileType {
  if (!(FILE_TYPES as readonly string[]).includes(value)) throw errors.invalid("file_type_invalid", `Invalid file type: must be one of ${FILE_TYPES.join(", ")}.`, "type");
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

type UploadMessage<Start> = {
  part: { case: "start"; value: Start } | { case: "data"; value: Uint8Array } | { case: "end"; value: { size: bigint; purpose?: string } } | { case: undefined; value?: undefined };
};

/**
 * The first message of an upload stream (its `start`), and the rest as the bytes they carry. The bytes end with
 * the stream's own `end` message, whose size must be what arrived: a stream that stops without it was cut off
 * (grpc-js half-closes a cancelled call's stream), and the generator throws, so the store keeps nothing.
 */
async function openUpload<Start>(
  requests: AsyncIterable<UploadMessage<Start>>,
  onEnd: (end: { size: bigint; purpose?: string }) => void = () => undefined,
): Promise<{ start: Start; bytes: AsyncGenerator<Uint8Array> }> {
  const iterator = requests[Symbol.asyncIterator]();
  const first = await iterator.next();
  if (first.done || first.value.part.case !== "start") throw errors.invalid("parameter_missing", "An upload stream begins with its start message.");
  async function* bytes(): AsyncGenerator<Uint8Array> {
    let received = 0n;
    for (;;) {
      const next = await iterator.next();
      if (next.done) throw errors.unavailable();
      const part = next.value.part;
      if (part.case === "data") {
        received += BigInt(part.value.length);
        yield part.value;
      } else if (part.case === "end") {
        if (part.value.size !== received) throw errors.invalid("parameter_invalid", `The upload's end says ${part.value.size} bytes; ${received} arrived.`);
        // Checks of what the end carries fail the bytes too (nothing kept).
        onEnd(part.value);
        return;
      } else throw errors.invalid("parameter_invalid", "An upload stream has one start message, then data, then its end.");
    }
  }
  return { start: first.value.part.value, bytes: bytes() };
}

/**
 * The FileService RPCs: unary ones declared as rpc.read / rpc.write (grpc/define-rpc.ts); the streams check the
 * tenant and the presented key before the first byte is stored, then move the bytes in 1 MiB messages.
 */
export function fileService(
  store: FileStore,
  uploads: UploadStore,
  checkKey: PresentedKeyCheck,
  maxBytes: () => number = () => UPLOAD_MAX_BYTES,
): ServiceImplementation<typeof FileService> {
  const declared = {
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
      load: (query, { tenant }) => store.list(tenant, query),
      reply: (page) => ({ files: page.items.map(fileMessage), hasMore: page.hasMore }),
    }),
    deleteFile: rpc.write({
      parse: (request: DeleteFileRequest) => ({ id: fileIdOf(request.id) }),
      write: ({ id }, { tenant }) => store.delete(tenant, id),
      reply: (doc) => ({ id: doc._id }),
    }),
    createUpload: rpc.write({
      parse: (request: CreateUploadRequest) => {
        const purpose = uploadPurposeOf(request.purpose);
        const filename = filenameOf(request.filename, true) ?? "";
        if (request.bytes < 0n || request.bytes > BigInt(UPLOAD_MAX_BYTES)) {
          throw errors.invalid("parameter_invalid", `Invalid bytes: an upload is 0 to ${UPLOAD_MAX_BYTES} bytes (8 GiB).`, "bytes");
        }
        return { purpose, filename, bytes: Number(request.bytes), type: typeOf(request.type) };
      },
      write: (upload, { tenant, info }) => uploads.create(tenant, upload, info.idempotencyKey),
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
  const unary = Object.fromEntries(
    Object.entries(declared).map(([name, declaration]) => [
      name,
      (request: unknown, context: CallContext) => (declaration as { run: (r: unknown, c: CallContext, k: PresentedKeyCheck) => Promise<unknown> }).run(request, context, checkKey),
    ]),
  );

  const streams: Pick<ServiceImplementation<typeof FileService>, "uploadFile" | "readFile" | "uploadPart"> = {
    async uploadFile(requests, context) {
      // The purpose comes with the start, or with the end when the caller learnt it only after the bytes.
      const described: NewFile = { purpose: "resources_import", type: "jsonl", filename: null, idempotencyKey: requestInfo(context).idempotencyKey };
      let purposeAtStart = "";
      const { start, bytes } = await openUpload(requests as AsyncIterable<UploadMessage<NonNullable<unknown>>>, (end) => {
        described.purpose = uploadPurposeOf(purposeAtStart || (end.purpose ?? ""));
      });
      const head = start as UploadFileStart;
      const tenant = tenantOf(head.tenant);
      purposeAtStart = head.purpose;
      if (purposeAtStart !== "") described.purpose = uploadPurposeOf(purposeAtStart);
      described.type = typeOf(head.type);
      described.filename = filenameOf(head.filename, false);
      const limit = head.maxBytes > 0n ? Math.min(Number(head.maxBytes), maxBytes()) : maxBytes();
      await checkKey(context, tenant);
      try {
        const file = await store.createFromStream(tenant, described, bytes, { maxBytes: limit });
        return { file: fileMessage(file) };
      } catch (error) {
        if (error instanceof BlobTooLarge) throw errors.of("request_too_large", `A file is at most ${limit} bytes.`, "file");
        throw error;
      }
    },

    async *readFile(request, context) {
      const tenant = tenantOf(request.tenant);
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
        for (let at = 0; at < piece.length; at += READ_MESSAGE_BYTES) yield { part: { case: "data" as const, value: piece.subarray(at, at + READ_MESSAGE_BYTES) } };
      }
    },

    async uploadPart(requests, context) {
      const { start, bytes } = await openUpload(requests as AsyncIterable<UploadMessage<NonNullable<unknown>>>);
      const head = start as UploadPartStart;
      const tenant = tenantOf(head.tenant);
      const uploadId = uploadIdOf(head.uploadId);
      await checkKey(context, tenant);
      const part = await uploads.addPart(tenant, uploadId, bytes);
      return { part: partMessage(part) };
    },
  };
  return { ...unary, ...streams } as unknown as ServiceImplementation<typeof FileService>;
}
