import type { KeyKind } from "@rms/proto";
import type { RequestHandler, Response } from "express";
import type { Logger } from "pino";
import { requestIdOf } from "./request-id.js";

/** Who made a request, as far as the access log needs it (never the secret). */
export interface LoggedPrincipal {
  readonly keyId: string;
  readonly kind: KeyKind;
  readonly tenant: { readonly accountId: string; readonly livemode: boolean };
  /** A dashboard session's key: the request log's `source` is `dashboard`. */
  readonly dashboardSession?: boolean;
}

/** What the access line of a request says beyond method, path and status; filled in while it runs. */
export interface RequestFacts {
  principal?: LoggedPrincipal;
  errorCode?: string;
  /** The parameters as parsed (query or body), for the request log. */
  params?: unknown;
  /** The body as given to `res.send` (text or bytes), for the request log. */
  body?: unknown;
  /**
   * A success body as the gateway rendered it (`text` is the JSON text sent): the request log reads the object it
   * was written from, or parses `text`, instead of parsing whatever was sent (engine/run.ts).
   */
  answer?: { readonly text: string; readonly object?: Record<string, unknown> };
}

const facts = new WeakMap<Response, RequestFacts>();

/** What is known about a request so far (the request log reads it once the answer is sent). */
export function factsOf(res: Response): RequestFacts {
  const known = facts.get(res);
  if (known) return known;
  const fresh: RequestFacts = {};
  facts.set(res, fresh);
  return fresh;
}

/** Called once the key is verified: the request's line names the key, its account and its mode. */
export function recordPrincipal(res: Response, principal: LoggedPrincipal): void {
  factsOf(res).principal = principal;
}

/** Called once the parameters are parsed: the request log keeps them (redacted, cut at 8 KiB). */
export function recordParams(res: Response, params: unknown): void {
  factsOf(res).params = params;
}

/** Called just before a rendered success body is sent as `answer.text` (the request log takes it from here). */
export function recordAnswer(res: Response, answer: NonNullable<RequestFacts["answer"]>): void {
  factsOf(res).answer = answer;
}

/** Called by the one function that sends errors: the request's line carries the error code. */
export function recordErrorCode(res: Response, code: string): void {
  factsOf(res).errorCode = code;
}

/**
 * One structured line per request, with its id, the key's id, account and mode
 * (null before a key is verified) and the error code of an error answer; never
 * headers (they carry keys).
 */
export function accessLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.on("finish", () => {
      const { principal, errorCode } = factsOf(res);
      logger.info(
        {
          request_id: requestIdOf(res),
          method: req.method,
          path: req.path,
          status: res.statusCode,
          duration_ms: Number((process.hrtime.bigint() - started) / 1_000_000n),
          key_id: principal?.keyId ?? null,
          account: principal?.tenant.accountId ?? null,
          livemode: principal?.tenant.livemode ?? null,
          ...(errorCode !== undefined ? { code: errorCode } : {}),
        },
        "request",
      );
    });
    next();
  };
}
