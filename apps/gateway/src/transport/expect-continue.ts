import type { IncomingMessage, Server, ServerResponse } from "node:http";

/** The answers of requests whose client waits for `100 Continue` before it sends the body, by request. */
const awaiting = new WeakMap<IncomingMessage, ServerResponse>();

/**
 * Serves requests sent with `Expect: 100-continue` as the others, without Node's automatic `100 Continue` (sent as
 * soon as the headers arrive, before anything was checked): `100 Continue` goes out only when the body is about to
 * be read (`continueBody`), after every check that needs no body (the key, the scope, the rate limit, the content
 * type, an upload's quota). A request refused before that gets its final answer instead, and its client sends no
 * body (Node then closes the connection after the answer; transport/linger.ts reads what a client sends anyway).
 */
export function answerBeforeContinue(server: Server): void {
  server.on("checkContinue", (req: IncomingMessage, res: ServerResponse) => {
    awaiting.set(req, res);
    server.emit("request", req, res);
  });
}

/** Tells a client that waits for it to send the body (`100 Continue`): called by each reader of a body before it reads. */
export function continueBody(req: IncomingMessage): void {
  const res = awaiting.get(req);
  if (res === undefined) return;
  awaiting.delete(req);
  if (!res.headersSent && !res.writableEnded) res.writeContinue();
}

/** Whether the client holds its body back until `100 Continue` (which has not been sent yet). */
export function awaitingContinue(req: IncomingMessage): boolean {
  return awaiting.has(req);
}
