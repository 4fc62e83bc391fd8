// The consumer's client, as an integrator writes it: the installed package, a key, where the API is, its certificate.
import { readFileSync } from "node:fs";
import { RMS } from "@rms/sdk";

export const rms = new RMS(process.env.RMS_API_KEY, { baseUrl: process.env.RMS_BASE_URL, ca: readFileSync(process.env.RMS_CA) });

/** What the script found, as the last line of its output (the test reads it). */
export function report(facts) {
  console.log(JSON.stringify(facts));
}
