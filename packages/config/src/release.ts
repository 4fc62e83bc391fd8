import { createRequire } from "node:module";

/**
 * The software's release (`1.4.N`, RELEASES.md): this package's version, which every package of the repository shares
 * (release.test.ts), read from its package.json (one directory up from src/ and dist/ alike). Each process logs it
 * at start, the gateway answers it in `GET /v1/status`, and migrations record which release ran them.
 */
export const RELEASE: string = (createRequire(import.meta.url)("../package.json") as { version: string }).version;
