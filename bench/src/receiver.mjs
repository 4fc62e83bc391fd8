// The webhook receiver of `npm run bench`: answers every delivery 200 at once, counts deliveries by url path, and
// notes when each resource's `resource.created` first arrived (the create -> delivery latency).
import { createServer } from "node:http";

export async function startReceiver() {
  const received = { byPath: new Map(), createdAt: new Map() };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const at = performance.now();
      received.byPath.set(req.url, (received.byPath.get(req.url) ?? 0) + 1);
      try {
        const event = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        if (event.type === "resource.created" && !received.createdAt.has(event.data.object.id)) received.createdAt.set(event.data.object.id, at);
      } catch {}
      res.end("ok");
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    received,
    /** The url of a path at this receiver. */
    url: (path) => `${base}${path}`,
    /** Deliveries that reached these paths. */
    deliveredTo: (paths) => paths.reduce((sum, path) => sum + (received.byPath.get(path) ?? 0), 0),
    close: () => new Promise((r) => server.close(r)),
  };
}
