import { connectionError, RMSConnectionError, RMSError } from "../errors.js";
import type { RequestOptions } from "../options.js";
import type { OpenedAnswer, RequestSender } from "../request.js";
import { type RMSResponse, withLastResponse } from "../response.js";
import { retryDelayMs, sleep } from "../retry.js";

/** A file's bytes as they arrive, with the first answer's `lastResponse` (its headers: Content-Length, ETag, ...). */
export type FileContents = RMSResponse<ReadableStream<Uint8Array>>;

class Cut extends Error {}

/**
 * `files.contents`: the bytes of a file as a web ReadableStream. When the connection is cut (or no byte comes for
 * `timeoutMs`), it asks again with `Range: bytes=<received>-` and goes on from there, as long as the file is the same
 * one (its ETag); `maxNetworkRetries` cuts in a row without a byte between them end the stream with an error.
 */
export async function fileContents(sender: RequestSender, id: string, options?: RequestOptions): Promise<FileContents> {
  const path = `/v1/files/${encodeURIComponent(id)}/contents`;
  const settled = sender.settle(options);
  const first = await sender.open({ method: "GET", path, options });
  const total = Number(first.headers.get("content-length") ?? Number.NaN);
  const etag = first.headers.get("etag");
  let received = 0;
  let failures = 0;
  let reader = (first.body ?? new ReadableStream<Uint8Array>({ start: (c) => c.close() })).getReader();

  /** The next chunk, or a Cut when the connection broke or went quiet. */
  const nextChunk = async (): Promise<ReadableStreamReadResult<Uint8Array>> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const quiet = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Cut(`no byte for ${settled.timeoutMs} ms`)), settled.timeoutMs);
    });
    try {
      const result = await Promise.race([reader.read(), quiet]);
      if (result.done && Number.isFinite(total) && received < total) throw new Cut(`the answer ended after ${received} of ${total} bytes`);
      return result;
    } catch (error) {
      if (settled.signal?.aborted) throw settled.signal.reason;
      throw error instanceof Cut ? error : new Cut(error instanceof Error ? error.message : String(error));
    } finally {
      clearTimeout(timer);
    }
  };

  /** Asks for the rest, from the first byte not received, of the same file. */
  const resume = async (): Promise<void> => {
    reader.cancel().catch(() => {});
    const rest: OpenedAnswer = await sender.open({
      method: "GET",
      path,
      headers: { Range: `bytes=${received}-`, ...(etag ? { "If-Range": etag } : {}) },
      options: { ...options, maxNetworkRetries: 0 },
    });
    const from = /^bytes (\d+)-/.exec(rest.headers.get("content-range") ?? "")?.[1];
    if (rest.status !== 206 || Number(from) !== received || (etag && rest.headers.get("etag") !== etag)) {
      rest.body?.cancel().catch(() => {});
      throw new RMSError({
        type: "api_error",
        message: `files.contents: ${id} could not be resumed at byte ${received} (the file changed or the server ignored the range)`,
      });
    }
    reader = rest.body!.getReader();
  };

  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        try {
          const { done, value } = await nextChunk();
          if (done) return controller.close();
          received += value.length;
          failures = 0;
          return controller.enqueue(value);
        } catch (cut) {
          if (!(cut instanceof Cut)) return controller.error(cut);
          if (++failures > settled.maxNetworkRetries) return controller.error(connectionError(cut, failures));
          try {
            await sleep(retryDelayMs(failures, undefined)!, settled.signal);
            await resume();
          } catch (error) {
            // A resume that got no answer counts as another cut (the next read finds the old reader ended).
            if ((error instanceof RMSError && !(error instanceof RMSConnectionError)) || settled.signal?.aborted) return controller.error(error);
          }
        }
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  return withLastResponse(stream, first.info);
}
