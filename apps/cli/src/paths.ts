import { fileURLToPath } from "node:url";
import { join } from "node:path";

/** The repository root (this file is apps/cli/{src,dist}/paths.*). */
export const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

/** Development state kept between starts: embedded database, admin token, TLS certificate. */
export const dataDir = join(repoRoot, ".data");
export const adminTokenFile = join(dataDir, "admin-token");
