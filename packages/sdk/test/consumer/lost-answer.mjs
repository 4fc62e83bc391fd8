// A create whose first answer a proxy loses after the gateway made it: the SDK retries with the key it made, and
// the account holds exactly one resource of that name.
import { rms, report } from "./client.mjs";

const marker = `lost-${Date.now()}`;
const created = await rms.resources.create({ name: marker, metadata: { marker } });
const found = [];
for await (const resource of rms.resources.list({ metadata: { marker } })) found.push(resource.id);
report({ created: created.id, replayed: created.lastResponse.headers["idempotent-replayed"] ?? null, found });
