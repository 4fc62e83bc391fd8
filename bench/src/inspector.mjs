// The inspector protocol of a child process started with --inspect, for the on-demand profiling scripts
// (upload-profile.mjs, files-memory.mjs).
import { writeFileSync } from "node:fs";
import { join } from "node:path";

/** A session with the process whose inspector listens on `port`: `call(method, params)` answers its reply; `close()`. */
export async function inspectorSession(port) {
  const [target] = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
  const socket = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((resolve) => socket.addEventListener("open", resolve, { once: true }));
  const waiting = new Map();
  let lastId = 0;
  socket.addEventListener("message", (message) => {
    const reply = JSON.parse(message.data);
    waiting.get(reply.id)?.(reply);
    waiting.delete(reply.id);
  });
  const call = (method, params = {}) =>
    new Promise((resolve) => {
      waiting.set(++lastId, resolve);
      socket.send(JSON.stringify({ id: lastId, method, params }));
    });
  // An inspected process waits at its exit until its debugger has gone.
  return { call, close: () => socket.close() };
}

/** A CPU profiler over `session`, sampling every 500 µs: start(), then stop(name) writes `<dir>/<name>.cpuprofile`. */
export async function cpuProfiler(session, dir) {
  await session.call("Profiler.enable");
  await session.call("Profiler.setSamplingInterval", { interval: 500 });
  return {
    start: () => session.call("Profiler.start"),
    stop: async (name) => writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify((await session.call("Profiler.stop")).result.profile)),
  };
}
