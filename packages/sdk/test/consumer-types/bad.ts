// A consumer that misuses the parameters: `tsc --strict` must refuse each line marked `misuse`.
import { RMS } from "@rms/sdk";

const rms = new RMS("sk_test_key");

export async function main(): Promise<void> {
  await rms.resources.create({ name: "fine", status: "actve" }); // misuse: a status that does not exist
  await rms.resources.create({ status: "paused" }); // misuse: no name
  await rms.resources.list({ status: "deleted" }); // misuse: a status that does not exist
  await rms.resources.list({ starting_after: "res_1", ending_before: "res_2" }); // misuse: both cursors
}
