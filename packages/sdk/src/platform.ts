import { fetchTransport, type Transport } from "./transport.js";

/** What differs between Node and browsers: how requests are sent, and whether a path names a file. */
export interface Platform {
  /** The transport for a client's options (`fetch` given: that fetch). */
  transport(options: { readonly ca?: string | Uint8Array | undefined; readonly fetch?: typeof fetch | undefined }): Transport;
  /** A file on disk as a Blob that reads from disk (Node), for `files.create({ file: "./rows.jsonl" })`. */
  openFile?(path: string): Promise<Blob>;
  readonly userAgent?: string;
}

/** Browsers (and any runtime with `fetch`): the default; the Node build installs its own (src/node/platform.ts). */
const webPlatform: Platform = {
  transport(options) {
    if (options.ca !== undefined) throw new TypeError("the `ca` option is for Node: a browser trusts what the system trusts");
    const fetchFn = options.fetch ?? globalThis.fetch;
    if (typeof fetchFn !== "function") throw new TypeError("no fetch: give one with the `fetch` option");
    return fetchTransport(options.fetch ?? ((input, init) => globalThis.fetch(input, init)));
  },
};

let current: Platform = webPlatform;

export function platform(): Platform {
  return current;
}

export function usePlatform(next: Platform): void {
  current = next;
}
