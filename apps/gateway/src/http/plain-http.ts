import { KeyKind } from "@rms/proto";
import type { RequestHandler } from "express";
import type { Logger } from "pino";
import type { CoreClients } from "../core.js";
import { ApiError, sendError } from "../errors.js";
import { presentedKey } from "./auth.js";
import { arrivedOverHttps } from "./https.js";
import { requestIdOf } from "./request-id.js";

export const REVOKE_REASON = "seen over plain HTTP";

/**
 * Refuses every request that did not arrive over HTTPS (403 https_required),
 * performing nothing. A valid secret or restricted key that came with it is
 * compromised: it is revoked before the answer is sent, and the revocation is
 * logged with the key's id (never the key).
 */
export function requireHttps(trustedProxies: ReadonlySet<string>, core: CoreClients, logger: Logger): RequestHandler {
  return async (req, res, next) => {
    if (arrivedOverHttps(req, trustedProxies)) {
      next();
      return;
    }
    const requestId = requestIdOf(res);
    const secret = presentedKey(req.headers);
    if (secret) {
      try {
        const { key } = await core.admin.verifyKey({ secret }, { metadata: { "rms-request-id": requestId } });
        if (key && (key.kind === KeyKind.SECRET || key.kind === KeyKind.RESTRICTED)) {
          await core.admin.revokeKey({ keyId: key.id, reason: REVOKE_REASON }, { metadata: { "rms-request-id": requestId } });
          logger.warn({ request_id: requestId, key_id: key.id }, "API key revoked: it was sent over plain HTTP");
        }
      } catch (error) {
        // Invalid, expired or already revoked keys need nothing; an unreachable core is worth a line.
        const code = (error as { code?: unknown }).code;
        if (code !== "api_key_invalid" && code !== "api_key_expired" && code !== "api_key_revoked") {
          logger.error({ request_id: requestId, err: error instanceof Error ? error.message : String(error) }, "could not check a key sent over plain HTTP");
        }
      }
    }
    res.setHeader("Connection", "close");
    sendError(res, new ApiError("https_required", "Requests must be made over HTTPS. A secret or restricted API key sent over plain HTTP is compromised and is revoked at once."));
  };
}
