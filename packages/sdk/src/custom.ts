import { type FileContents, fileContents } from "./files/download.js";
import { type FileCreateParams, FileUploader, type UploadOptions } from "./files/upload.js";
import type { CustomMethodNames } from "./gen/operations.js";
import { type WaitOptions, waitForJob } from "./jobs.js";
import type { RequestOptions } from "./options.js";
import type { RequestSender } from "./request.js";
import type { RMSResponse } from "./response.js";
import { EVENT_STREAM, type EventStreamMethods, liveStream, REQUEST_LOG_STREAM, type RequestLogStreamMethods } from "./streams.js";
import type { Schemas } from "./types.js";

/**
 * The methods written by hand: the operations whose body or answer is not JSON (the generated table lists them as
 * `custom`), and what the API has no route for (`jobs.wait`).
 */
export interface HandWrittenNamespaces {
  readonly files: {
    /** Uploads a file (`POST /v1/files`, or `/v1/uploads` in parts above 64 MiB) and answers it once every byte is durable. */
    create(params: FileCreateParams, options?: UploadOptions): Promise<RMSResponse<Schemas["File"]>>;
    /** A file's bytes as a web ReadableStream; a cut download resumes with `Range` where it stopped. */
    contents(id: string, options?: RequestOptions): Promise<FileContents>;
  };
  readonly uploads: {
    /** Adds one part (at most 64 MiB) to an upload: `POST /v1/uploads/{id}/parts`. */
    addPart(id: string, part: Blob | Uint8Array, options?: RequestOptions): Promise<RMSResponse<Schemas["UploadPart"]>>;
  };
  readonly jobs: {
    /** Resolves with the job once it has finished (succeeded, failed or canceled); JobWaitTimeoutError after `timeoutMs`. */
    wait(id: string, options?: WaitOptions): Promise<RMSResponse<Schemas["Job"]>>;
  };
  readonly events: EventStreamMethods;
  readonly requestLogs: RequestLogStreamMethods;
}

export function handWritten(sender: RequestSender): HandWrittenNamespaces {
  const uploader = new FileUploader(sender);
  return {
    files: {
      create: (params, options) => uploader.create(params, options),
      contents: (id, options) => fileContents(sender, id, options),
    },
    uploads: { addPart: (id, part, options) => uploader.addPart(id, part, options) },
    jobs: { wait: (id, options) => waitForJob(sender, id, options) },
    events: { stream: (params, options) => liveStream(sender, EVENT_STREAM, params, options) },
    requestLogs: { stream: (params, options) => liveStream(sender, REQUEST_LOG_STREAM, params, options) },
  };
}

/** True when every custom operation of the API document has a hand-written method: a new one fails this type check. */
type Covered = {
  [N in keyof CustomMethodNames]: N extends keyof HandWrittenNamespaces
    ? [CustomMethodNames[N]] extends [keyof HandWrittenNamespaces[N]]
      ? true
      : false
    : false;
};
export const everyCustomOperationIsWritten: Covered[keyof Covered] extends true ? true : never = true;
