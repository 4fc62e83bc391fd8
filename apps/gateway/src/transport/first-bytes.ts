import type { Socket } from "node:net";

/**
 * Reads a new connection's first bytes before anyone else listens to it. `decide` gets every byte read so far and
 * returns undefined to wait for more, or what to do with the connection: that runs once these listeners are off
 * (so it may put bytes back with `unshift` for the next reader). Undecided, the connection is destroyed after
 * `timeoutMs` or when the client ends it; until then its errors are ignored (a reset connection must not become an
 * uncaught error).
 */
export function readFirstBytes(socket: Socket, timeoutMs: number, decide: (received: Buffer) => (() => void) | undefined): void {
  let received = Buffer.alloc(0);
  const timer = setTimeout(() => socket.destroy(), timeoutMs);
  const ignore = () => undefined;
  const done = () => {
    clearTimeout(timer);
    socket.off("readable", onReadable);
    socket.off("end", onEnd);
    socket.off("error", ignore);
  };
  const onEnd = () => {
    done();
    socket.destroy();
  };
  const onReadable = () => {
    for (let chunk = socket.read() as Buffer | null; chunk !== null; chunk = socket.read() as Buffer | null) received = Buffer.concat([received, chunk]);
    if (received.length === 0) return;
    const take = decide(received);
    if (!take) return;
    done();
    take();
  };
  socket.on("readable", onReadable);
  socket.on("end", onEnd);
  socket.on("error", ignore);
}
