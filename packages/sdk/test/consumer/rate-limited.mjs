// A list whose first attempt a proxy answers 429 with Retry-After: the SDK waits that long and tries again.
import { rms, report } from "./client.mjs";

const page = await rms.resources.list({ limit: 1 });
report({ object: page.object, statusCode: page.lastResponse.statusCode });
