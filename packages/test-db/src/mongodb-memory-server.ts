import { connect } from "node:net";
import { lookup } from "node:dns/promises";
import { DryMongoBinary, MongoBinary } from "mongodb-memory-server-core";
import { MongoBinaryDownloadUrl } from "mongodb-memory-server-core/lib/util/MongoBinaryDownloadUrl.js";

/** How long the download site may take to answer a TCP connect before the step is given up. */
export const DOWNLOAD_PROBE_MS = 3_000;

export interface MongodBinary {
  path: string;
  version: string;
}

/** The download site cannot be reached: the launcher moves on to the next engine. */
export class NoDownloadRoute extends Error {}

/** True when `host:port` accepts a TCP connection within `timeoutMs` (name lookup included). */
export async function reachable(host: string, port: number, timeoutMs: number): Promise<boolean> {
  const deadline = new Promise<false>((resolve) => setTimeout(() => resolve(false), timeoutMs).unref());
  const attempt = (async () => {
    const { address } = await lookup(host);
    return new Promise<boolean>((resolve) => {
      const socket = connect({ host: address, port });
      const done = (ok: boolean): void => {
        socket.destroy();
        resolve(ok);
      };
      socket.setTimeout(timeoutMs, () => done(false));
      socket.once("connect", () => done(true));
      socket.once("error", () => done(false));
    });
  })().catch(() => false);
  return Promise.race([attempt, deadline]);
}

/**
 * A real `mongod` through mongodb-memory-server-core, used only as a binary cache and
 * downloader (the server itself is run by the launcher like a `mongod` on PATH). The
 * cached binary of its default version (MongoDB 8; MONGOMS_VERSION changes it) is used
 * when present; otherwise it is downloaded once, but only after the download site
 * answered a TCP connect within DOWNLOAD_PROBE_MS, so a machine without a route gives
 * up in seconds instead of after the library's retries.
 */
export async function ensureMongodBinary(log: (line: string) => void): Promise<MongodBinary> {
  const options = await DryMongoBinary.generateOptions({});
  const cached = await DryMongoBinary.locateBinary(options);
  if (cached) return { path: cached, version: options.version };
  const url = new URL(await new MongoBinaryDownloadUrl(options).getDownloadUrl());
  if (!(await reachable(url.hostname, Number(url.port) || 443, DOWNLOAD_PROBE_MS))) {
    throw new NoDownloadRoute(`no MongoDB ${options.version} binary cached and its download site (${url.hostname}) does not answer`);
  }
  log(`downloading MongoDB ${options.version} for mongodb-memory-server (first run only)`);
  return { path: await MongoBinary.getPath({ version: options.version }), version: options.version };
}
