import { address, ConfigError, parseEnvironment, token } from "@rms/config";
import { z } from "zod";

export { ConfigError };

/** Where `rms` finds core when neither CORE_ADDR nor --core says. */
export const DEFAULT_CORE_ADDR = "127.0.0.1:50051";

/** The operator commands' variables, by the rules core and gateway check them with (@rms/config). */
const schema = z.object({
  CORE_ADDR: address(DEFAULT_CORE_ADDR),
  RMS_ADMIN_TOKEN: token().optional(),
});

/** Checks the variables `rms accounts|keys` read; a bad one is a ConfigError naming it. */
export function checkOperatorEnvironment(env: Record<string, string | undefined>): void {
  parseEnvironment(schema, env);
}
