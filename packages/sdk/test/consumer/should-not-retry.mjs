// A 503 that says `Stripe-Should-Retry: false` is answered at once; a 503 without it is retried.
import { RMSAPIError } from "@rms/sdk";
import { rms, report } from "./client.mjs";

let refused;
try {
  await rms.resources.list({ limit: 1 });
  refused = { thrown: false };
} catch (error) {
  refused = { thrown: true, apiError: error instanceof RMSAPIError, statusCode: error.statusCode, code: error.code };
}
const retried = await rms.resources.retrieve(process.argv[2]);
report({ refused, retried: retried.id });
