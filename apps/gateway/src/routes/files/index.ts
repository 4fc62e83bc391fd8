import type { Operation } from "../../engine/operation.js";
import { fileContents } from "./contents.js";
import { listFiles } from "./list.js";
import { uploadPart } from "./parts.js";
import { deleteFile, retrieveFile } from "./retrieve.js";
import { uploadFile } from "./upload-file.js";
import { cancelUpload, completeUpload, createUpload, retrieveUpload } from "./uploads.js";

/** Every public operation on files and uploads in parts (CONTRACT.md section 11). */
export const FILE_OPERATIONS: readonly Operation[] = [
  uploadFile,
  listFiles,
  retrieveFile,
  deleteFile,
  fileContents,
  createUpload,
  retrieveUpload,
  uploadPart,
  completeUpload,
  cancelUpload,
];
