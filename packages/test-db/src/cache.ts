import { homedir } from "node:os";
import { join } from "node:path";

export type Env = Readonly<Record<string, string | undefined>>;

/** Where built engines are cached, outside the repository: $RMS_CACHE_DIR, else $XDG_CACHE_HOME/rms, else ~/.cache/rms. */
export function cacheDir(env: Env): string {
  if (env.RMS_CACHE_DIR) return env.RMS_CACHE_DIR;
  return join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "rms");
}
