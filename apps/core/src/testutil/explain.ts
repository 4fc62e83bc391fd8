import type { Db, Document } from "mongodb";

/** Every stage of a plan, depth first. */
function stages(plan: Record<string, unknown>): Record<string, unknown>[] {
  const children = [plan["inputStage"], ...((plan["inputStages"] as unknown[] | undefined) ?? [])].filter(Boolean) as Record<string, unknown>[];
  return [plan, ...children.flatMap(stages)];
}

/** The winning plan of an `explain` answer (a find's, or an aggregation's first stage's), as `STAGE` or `IXSCAN(index)` names. */
export function planOf(explained: Document): string[] {
  const planner = (explained["queryPlanner"] ?? explained["stages"]?.[0]?.["$cursor"]?.["queryPlanner"]) as { winningPlan: Record<string, unknown> };
  const winning = (planner.winningPlan["queryPlan"] ?? planner.winningPlan) as Record<string, unknown>;
  return stages(winning).map((s) => (s["indexName"] ? `${s["stage"]}(${s["indexName"]})` : String(s["stage"])));
}

/** How many keys each index of a collection holds (the server's own count, by `validate`). */
export async function keysPerIndex(db: Db, collection: string): Promise<Record<string, number>> {
  return (await db.command({ validate: collection }))["keysPerIndex"] as Record<string, number>;
}
