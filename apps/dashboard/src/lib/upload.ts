import type { FileObject } from "@rms/sdk";
import { type Client, unwrap } from "../api/client";

/** Uploads a file through the SDK (`files.create`, purpose `resources_import`; parts above 64 MiB), reporting bytes sent as they go. */
export function uploadFile(client: Client, file: File, onProgress: (sent: number, total: number) => void): Promise<FileObject> {
  onProgress(0, file.size);
  return unwrap(client.files.create({ purpose: "resources_import", file, filename: file.name }, { onProgress }));
}
