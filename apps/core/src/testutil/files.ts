import { FileService, type ServiceClient } from "@rms/proto";
import { beforeAll } from "vitest";
import { FileStore } from "../files/store.js";
import { useTestCore, type TestCore } from "./harness.js";

/** A test core with the files domain's client and its store on the core's database. */
export interface FilesCore extends TestCore {
  readonly files: ServiceClient<typeof FileService>;
  /** What the files domain stored: documents, blobs and chunks. */
  readonly store: FileStore;
}

/** For a files test file: `useTestCore()` and, once it runs, its FileService client and a FileStore on its database. */
export function useFilesCore(): FilesCore {
  const t = useTestCore();
  beforeAll(() => {
    Object.assign(t, { files: t.client(FileService), store: new FileStore(t.db) });
  });
  return t as FilesCore;
}
