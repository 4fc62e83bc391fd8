import { FileService } from "@rms/proto";
import { OPERATOR_AND_GATEWAY as both, serviceDomain } from "../domain.js";
import { fileService } from "./service.js";
import { FileStore } from "./store.js";
import { UploadStore } from "./uploads.js";

/** Files and uploads in parts (CONTRACT.md section 11, in ../shared/docs/; docs/files.md). Files record no events. */
export const filesDomain = serviceDomain({
  name: "files",
  service: FileService,
  callers: {
    uploadFile: both,
    getFile: both,
    listFiles: both,
    deleteFile: both,
    readFile: both,
    createUpload: both,
    getUpload: both,
    uploadPart: both,
    completeUpload: both,
    cancelUpload: both,
    admitUpload: both,
  },
  open({ db, checkKey, logger, faults, settings }) {
    const store = new FileStore(db, { streamLeaseMs: settings.filesWriteLeaseMs, quotaBytes: settings.filesQuotaBytes });
    const uploads = new UploadStore(store);
    return {
      indexes: store,
      implementation: fileService(store, uploads, checkKey, undefined, faults),
      // The sweep (every FILES_SWEEP_INTERVAL_MS): each pass reclaims up to 100 blobs; a pass that reclaimed a full
      // batch is followed at once by another.
      start() {
        let stopped = false;
        let timer: NodeJS.Timeout | undefined;
        let running: Promise<void> = Promise.resolve();
        const pass = async () => {
          try {
            while (!stopped && (await store.sweep()) >= 100);
          } catch (error) {
            logger.warn({ err: error instanceof Error ? error.message : String(error) }, "files sweep failed; retried at the next pass");
          }
        };
        const schedule = () => {
          if (stopped) return;
          timer = setTimeout(() => {
            running = pass().then(schedule);
          }, settings.filesSweepIntervalMs);
          timer.unref();
        };
        schedule();
        return async () => {
          stopped = true;
          clearTimeout(timer);
          await running;
        };
      },
    };
  },
});
