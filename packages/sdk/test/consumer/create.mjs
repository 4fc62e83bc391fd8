// A create without an idempotency key (the SDK makes one) and one with a key, sent twice: the second is a replay.
import { rms, report } from "./client.mjs";

const plain = await rms.resources.create({ name: "made by the SDK", metadata: { source: "sdk" } });
const key = `sdk-test-${Date.now()}`;
const keyed = await rms.resources.create({ name: "keyed", status: "paused" }, { idempotencyKey: key });
const again = await rms.resources.create({ name: "keyed", status: "paused" }, { idempotencyKey: key });
report({
  plain: { id: plain.id, name: plain.name, metadata: plain.metadata, status: plain.lastResponse.statusCode, requestId: plain.lastResponse.requestId },
  enumerable: Object.keys(plain),
  json: JSON.parse(JSON.stringify(plain)),
  keyed: { id: keyed.id, status: keyed.status, replayed: keyed.lastResponse.headers["idempotent-replayed"] ?? null },
  again: { id: again.id, replayed: again.lastResponse.headers["idempotent-replayed"] ?? null },
});
