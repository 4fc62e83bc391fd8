import { type Client, unwrap } from "../api/client";

/**
 * Downloads a file's contents with the tab's key (a plain link cannot carry the Authorization header): read through
 * the SDK (a cut download resumes where it stopped), then saved under the name the API's Content-Disposition gives.
 */
export async function downloadFile(client: Client, fileId: string, fallbackName: string): Promise<void> {
  const contents = await unwrap(client.files.contents(fileId));
  const blob = await unwrap(new Response(contents).blob());
  const name = /filename="([^"]+)"/.exec(contents.lastResponse.headers["content-disposition"] ?? "")?.[1] ?? fallbackName;
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
