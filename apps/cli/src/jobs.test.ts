import { JobService, bearerMetadata, createClient } from "@rms/proto";
import { describe, expect, it } from "vitest";
import { ADMIN_TOKEN, useCliCore } from "./testutil/cli-core.js";

const core = useCliCore("cli-jobs", { relay: false });
const { rms } = core;

describe("rms jobs", () => {
  it("lists, shows and cancels jobs of any account and mode with the admin credential, one JSON object per line", async () => {
    const account = (await rms("accounts", "create", "--json")).json()[0].id as string;
    const client = createClient(JobService, core.address, { metadata: bearerMetadata(ADMIN_TOKEN) });
    const tenant = { accountId: account, livemode: true };
    const items = { kind: { case: "importItems" as const, value: { items: [{ name: "a" }, { name: "b" }] } } };
    const first = (await client.createJob({ tenant, params: items })).job!;
    const second = (await client.createJob({ tenant, params: items })).job!;
    client.close();

    const list = await rms("jobs", "list", "--account", account, "--mode", "live", "--json");
    expect(list.code).toBe(0);
    const jobs = list.json();
    expect(jobs.map((j) => j.id)).toEqual([second.id, first.id]);
    expect(jobs[0]).toMatchObject({
      object: "job",
      type: "resources.import",
      status: "queued",
      livemode: true,
      params: { file: expect.stringMatching(/^file_/) },
    });
    expect((await rms("jobs", "list", "--account", account, "--mode", "test", "--json")).json()).toEqual([]);
    expect((await rms("jobs", "list", "--account", account, "--mode", "live", "--status", "canceled", "--json")).json()).toEqual([]);

    const shown = await rms("jobs", "get", first.id, "--account", account, "--mode", "live");
    // The line names the file an import reads (an inline import's items are stored as one).
    const input = (jobs[1] as { params: { file: string } }).params.file;
    expect(shown.stdout).toBe(`${first.id}  resources.import  queued  0/2 processed, 0 failed, 0 skipped  from ${input}\n`);

    const canceled = await rms("jobs", "cancel", first.id, "--account", account, "--mode", "live", "--json");
    expect(canceled.code).toBe(0);
    expect(canceled.json()[0]).toMatchObject({ id: first.id, status: "canceled", result: { created: 0, errors: [] } });

    const again = await rms("jobs", "cancel", first.id, "--account", account, "--mode", "live");
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/\[state_conflict\]\n$/);
    // An account that does not exist is said so, not listed as having no jobs.
    const nope = await rms("jobs", "list", "--account", "acct_nope", "--mode", "test");
    expect([nope.code, nope.stdout]).toEqual([1, ""]);
    expect(nope.stderr).toMatch(/^rms: No such account: 'acct_nope'.*\[resource_missing\]\n$/);
    const missing = await rms("jobs", "get", first.id, "--account", account, "--mode", "test");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/No such job.*\[resource_missing\]/);
    expect((await rms("jobs", "list", "--account", account)).code).toBe(2);
  });
});
