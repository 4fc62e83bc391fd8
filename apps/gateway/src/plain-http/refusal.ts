import type { IncomingMessage } from "node:http";
import type { RequestHandler } from "express";
import { ApiError } from "../errors.js";
import { sendError } from "../http/send-error.js";
import type { AddressRateLimit } from "../ratelimit/index.js";
import { leakedKeyCandidates } from "../revocation/scan.js";
import type { KeyRevoker } from "../revocation/revoker.js";
import { BODY_LIMIT_BYTES } from "../parsing/body.js";
import { arrivedOverHttps, clientAddress } from "../transport/client-address.js";
import { presentedKey } from "../auth/auth.js";
import { requestIdOf } from "../http/request-id.js";

export { REVOKE_REASON } from "../revocation/revoker.js";

export function httpsRequired(): ApiError {
  return new ApiError(
    "https_required",
    "Requests must be made over HTTPS. A secret or restricted API key sent over plain HTTP is compromised and is revoked at once.",
  );
}

/** Up to the body size limit of a request's body, whatever its type; the rest is not read. */
function bodyPrefix(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => {
      req.off("data", onData);
      req.off("end", done);
      req.off("error", done);
      req.off("aborted", done);
      resolve(Buffer.concat(chunks).subarray(0, BODY_LIMIT_BYTES));
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= BODY_LIMIT_BYTES) {
        req.pause();
        done();
      }
    };
    req.on("data", onData);
    req.on("end", done);
    req.on("error", done);
    req.on("aborted", done);
  });
}

/**
 * Refuses every request that did not arrive over HTTPS (403 https_required),
 * performing nothing. Every secret or restricted key found anywhere in it
 * (headers, URL, body up to the size limit) is compromised: it is revoked
 * before the answer is sent, or kept pending and refused until core has
 * revoked it. At most 20 keys per request are looked up, each costing a token
 * of the client address's rate limit; over it, the answer is the same 403
 * without the lookups.
 */
export function requireHttps(trustedProxies: ReadonlySet<string>, revoker: KeyRevoker, addressLimit: AddressRateLimit): RequestHandler {
  return async (req, res, next) => {
    if (arrivedOverHttps(req, trustedProxies)) {
      next();
      return;
    }
    const requestId = requestIdOf(res);
    const body = await bodyPrefix(req);
    const candidates = leakedKeyCandidates({ headers: req.headers, url: req.originalUrl, body });
    const address = clientAddress(req, trustedProxies);
    await revoker.revokeSeen(candidates, requestId, (count) => addressLimit.takeUpTo(address, count));
    res.setHeader("Connection", "close");
    sendError(res, httpsRequired());
  };
}

/** Over HTTPS: a key whose plain-HTTP revocation is still pending is refused as revoked. */
export function refusePendingRevocations(revoker: KeyRevoker): RequestHandler {
  return (req, _res, next) => {
    const secret = presentedKey(req.headers);
    if (secret && revoker.isPending(secret)) throw new ApiError("api_key_revoked", "This API key was sent over plain HTTP and has been revoked.");
    next();
  };
}
