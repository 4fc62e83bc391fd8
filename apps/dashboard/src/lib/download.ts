import { failureOf, networkFailure } from "../api/client";

/**
 * Downloads a file's contents with the tab's key (a plain link cannot carry the Authorization header): fetched as a
 * blob, then saved under the name the API's Content-Disposition gives.
 */
export async function downloadFile(key: string, fileId: string, fallbackName: string): Promise<void> {
  let response: Response;
  try {
    response = await fetch(`/v1/files/${encodeURIComponent(fileId)}/contents`, { headers: { Authorization: `Bearer ${key}` } });
  } catch (cause) {
    throw networkFailure(cause);
  }
  if (!response.ok) throw failureOf(response.status, await response.json().catch(() => null), response.headers.get("Request-Id"));
  const blob = await response.blob();
  const name = /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") ?? "")?.[1] ?? fallbackName;
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** Uploads a file to `POST /v1/files` (multipart, purpose `resources_import`), reporting bytes sent as they go. */
export function uploadFile(key: string, file: File, onProgress: (sent: number, total: number) => void): Promise<{ id: string }> {
  return new Promise((resolve, reject) => {
    const form = new FormData();
    form.append("purpose", "resources_import");
    form.append("file", file, file.name);
    const request = new XMLHttpRequest();
    request.open("POST", "/v1/files");
    request.setRequestHeader("Authorization", `Bearer ${key}`);
    request.upload.onprogress = (event) => onProgress(event.loaded, event.lengthComputable ? event.total : file.size);
    request.onerror = () => reject(networkFailure(new Error("the upload failed")));
    request.onload = () => {
      let body: unknown = null;
      try {
        body = JSON.parse(request.responseText);
      } catch {
        body = null;
      }
      if (request.status >= 200 && request.status < 300) resolve(body as { id: string });
      else reject(failureOf(request.status, body, request.getResponseHeader("Request-Id")));
    };
    request.send(form);
  });
}
