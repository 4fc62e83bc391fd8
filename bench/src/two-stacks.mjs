// A setting's cost on the GET row: the bench's stack and a second `rms start` on the same mongod (a database name of
// its own, the setting in its environment), both up during every run, the same GET measured on each in turn. The
// tracing rows (tracing.mjs) and the request-log rows (request-logs.mjs) are two such pairs.
import { readFileSync } from "node:fs";
import { runner } from "./load.mjs";
import { benchResource, startStack, stopProcess } from "./stack.mjs";

/**
 * Starts the second stack (`name`, its variables in `env`), makes it a resource and runs the GET on the sides that
 * `order` names in turn ("first": the bench's stack, "second": the other), each run named `<label of its side>_<n>`.
 * Returns each side's rounds in order; the second stack is stopped before it returns.
 */
export async function getOnTwoStacks({ stack, root, work, ports, own, connections, duration, warmup, ca, headers, resourceId, say, name, env, order, labels }) {
  const second = await startStack({ root, work, ports, own, say, name, mongoUri: stack.mongoUri, env });
  try {
    const secondCa = readFileSync(second.certFile);
    const secondUrl = `https://127.0.0.1:${ports.httpsPort}`;
    const secondHeaders = { authorization: `Bearer ${second.key}` };
    const created = await benchResource(secondUrl, secondCa, secondHeaders);
    const results = {};
    const sides = {
      first: {
        run: await runner({ results, connections, duration, warmup, ca, say }),
        url: `https://127.0.0.1:${stack.httpsPort}/v1/resources/${resourceId}`,
        headers,
        pids: () => stack.pids(),
      },
      // The second stack runs on the first one's mongod: its database column is that server's CPU too.
      second: {
        run: await runner({ results, connections, duration, warmup, ca: secondCa, say }),
        url: `${secondUrl}/v1/resources/${created.id}`,
        headers: secondHeaders,
        pids: () => ({ ...second.pids(), database: stack.pids().database }),
      },
    };
    // The second stack was just started: warmed as the first one was (main.mjs), so neither side measures JIT
    // compilation or pools filling (a traced stack measured cold read twice the CPU per request of the warm one).
    say(`warming the ${name} stack up (not measured)`);
    await sides.second.run.warm(sides.second.url, { headers: secondHeaders });
    const rounds = { first: [], second: [] };
    for (const side of order) {
      const { run, url, headers: sideHeaders, pids } = sides[side];
      const runName = `${labels[side]}_${rounds[side].length + 1}`;
      await run.http(runName, url, { headers: sideHeaders }, pids());
      rounds[side].push(results[runName]);
    }
    return rounds;
  } finally {
    second.admin.close();
    second.coreResources.close();
    await stopProcess(second.process);
  }
}
