import { testDatabaseName } from "@rms/test-db";
import { CommandLog, explainDuring, planTable, type QueryPlan } from "@rms/test-db/testkit";
import type {} from "@rms/test-db/vitest-setup";
import { MongoClient, type Db } from "mongodb";
import { afterAll, beforeAll, expect, inject } from "vitest";

/** What `usePlanCopies` hands a query-plans test file (usable at once; the client connects before the file's tests). */
export interface PlanCopies {
  /** The client that records its commands (both copies are its databases). */
  readonly client: MongoClient;
  /** The copy the code under test runs on. */
  readonly work: Db;
  /** The copy nothing changes, where the commands are explained: a delete is measured on what it would delete. */
  readonly pristine: Db;
  /**
   * Runs `run` on the working copy, explains every query it sent on the untouched copy (a collection scan fails
   * the explain), keeps the plans for the table (one row per distinct shape, the costliest of its runs) and
   * returns them with `run`'s value. A label whose code sent no query fails.
   */
  measure<T>(label: string, run: () => Promise<T>): Promise<{ value: T; plans: QueryPlan[] }>;
}

/**
 * For a query-plans test file (docs/database.md, "Every query has an index"): two copies of one data set, named
 * from `prefix` and each `prepare`d (indexes, then the documents) before the file's tests, and `measure`. After
 * the tests, `report` gets the table of every plan measured; then both copies are dropped.
 */
export function usePlanCopies(prefix: string, options: { prepare(db: Db): Promise<void>; report(table: string): void }): PlanCopies {
  const client = new MongoClient(inject("mongoUri"), { monitorCommands: true });
  const log = new CommandLog(client);
  const work = client.db(testDatabaseName(`${prefix}_work`));
  const pristine = client.db(testDatabaseName(`${prefix}_pristine`));
  const rows: { label: string; plan: QueryPlan }[] = [];
  beforeAll(async () => {
    await client.connect();
    for (const db of [work, pristine]) await options.prepare(db);
  });
  afterAll(async () => {
    options.report(planTable(rows));
    await work.dropDatabase();
    await pristine.dropDatabase();
    await client.close();
  });
  async function measure<T>(label: string, run: () => Promise<T>): Promise<{ value: T; plans: QueryPlan[] }> {
    const { value, plans } = await explainDuring(client, log, run, { database: pristine.databaseName });
    expect(plans.length, `${label}: no query recorded`).toBeGreaterThan(0);
    const worst = new Map<string, { plan: QueryPlan; runs: number }>();
    for (const plan of plans) {
      const key = `${plan.operation} ${plan.shape}`;
      const seen = worst.get(key);
      if (!seen || plan.totalDocsExamined > seen.plan.totalDocsExamined) worst.set(key, { plan, runs: (seen?.runs ?? 0) + 1 });
      else seen.runs++;
    }
    for (const { plan, runs } of worst.values()) rows.push({ label: `${label}${runs > 1 ? ` (x${runs})` : ""}: ${plan.shape}`, plan });
    return { value, plans };
  }
  return { client, work, pristine, measure };
}

/** A page of `limit`: no in-memory sort, and at most about two documents examined per item. */
export function expectPage(plan: QueryPlan, limit: number): void {
  expect(plan.stages, plan.shape).not.toContain("SORT");
  expect(plan.totalDocsExamined, plan.shape).toBeLessThanOrEqual(2 * limit + 10);
  expect(plan.totalKeysExamined, plan.shape).toBeLessThanOrEqual(8 * (limit + 1) + 10);
}

/** A query by `_id` (or another unique key): one document at most. */
export function expectPoint(plan: QueryPlan): void {
  expect(plan.totalDocsExamined, plan.shape).toBeLessThanOrEqual(1);
}

/** Work that examines what it returns (or writes), and at most `slack` more. */
export function expectExact(plan: QueryPlan, slack = 2): void {
  expect(plan.totalDocsExamined, plan.shape).toBeLessThanOrEqual(plan.nReturned + slack);
}
