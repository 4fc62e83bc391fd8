// Two endpoints on a receiver of this script's own, one signing with a whsec_ secret (v1), one with Ed25519 (v1a):
// a real delivery to each verifies with Webhooks.verify; the same delivery with its body changed does not.
import { createServer } from "node:http";
import { RMS, Webhooks, WebhookVerificationError } from "@rms/sdk";
import { rms, report } from "./client.mjs";

const deliveries = [];
const receiver = createServer((req, res) => {
  let body = "";
  req.setEncoding("utf8");
  req.on("data", (chunk) => (body += chunk));
  req.on("end", () => {
    deliveries.push({ path: req.url, headers: req.headers, body });
    res.end("ok");
  });
});
await new Promise((resolve) => receiver.listen(0, "127.0.0.1", resolve));
const base = `http://127.0.0.1:${receiver.address().port}`;
const v1 = await rms.webhookEndpoints.create({ url: `${base}/v1`, enabled_events: ["resource.created"] });
const v1a = await rms.webhookEndpoints.create({ url: `${base}/v1a`, enabled_events: ["resource.created"], signature_scheme: "v1a" });
const resource = await rms.resources.create({ name: "announced" });

const arrived = (path) => deliveries.find((d) => d.path === path && JSON.parse(d.body).data.object.id === resource.id);
const deadline = Date.now() + 60_000;
while (!(arrived("/v1") && arrived("/v1a")) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));

async function check(path, secret) {
  const delivery = arrived(path);
  if (!delivery) return { delivered: false };
  const event = await Webhooks.verify(delivery.body, delivery.headers, secret);
  const tampered = delivery.body.replace('"announced"', '"tampered"');
  let refused = null;
  try {
    await RMS.Webhooks.verify(tampered, delivery.headers, secret);
  } catch (error) {
    refused = error instanceof WebhookVerificationError ? error.message : `not a WebhookVerificationError: ${error}`;
  }
  return {
    delivered: true,
    type: event.type,
    objectId: event.data.object.id,
    signature: delivery.headers["webhook-signature"].split(",")[0],
    tamperedChanged: tampered !== delivery.body,
    refused,
  };
}
const facts = {
  resource: resource.id,
  secret: v1.secret?.slice(0, 6),
  publicKey: v1a.public_key?.slice(0, 5),
  v1: await check("/v1", v1.secret),
  v1a: await check("/v1a", v1a.public_key),
};
await rms.webhookEndpoints.del(v1.id);
await rms.webhookEndpoints.del(v1a.id);
receiver.close();
report(facts);
