/**
 * The jump-to-id box (the top bar): any object id the API shows opens its page. An id is its prefix, `_`, then
 * base62 (`res_`, `evt_`, `we_`, `job_`, `file_`, `req_`, and `key_` for the keys page).
 */
export type JumpTarget =
  | { readonly to: "/resources/$id" | "/events/$id" | "/webhooks/$id" | "/jobs/$id" | "/files/$id" | "/request-logs/$id"; readonly id: string }
  | { readonly to: "/keys"; readonly id: string };

const PAGES = {
  res: "/resources/$id",
  evt: "/events/$id",
  we: "/webhooks/$id",
  job: "/jobs/$id",
  file: "/files/$id",
  req: "/request-logs/$id",
} as const;

export const JUMP_PREFIXES = [...Object.keys(PAGES), "key"] as const;

/** The page an id opens, or why there is none (a message for the box). */
export function jumpTarget(text: string): JumpTarget | { readonly problem: string } {
  const id = text.trim();
  const match = /^([a-z]+)_[0-9A-Za-z]+$/.exec(id);
  if (!match) return { problem: `"${id.slice(0, 40)}" is not an id: ids look like res_..., evt_..., we_..., job_..., file_... or req_....` };
  const prefix = match[1]!;
  if (prefix === "key") return { to: "/keys", id };
  const to = (PAGES as Record<string, JumpTarget["to"]>)[prefix];
  if (!to) return { problem: `No page shows ${prefix}_ ids: try res_, evt_, we_, job_, file_ or req_.` };
  return { to, id } as JumpTarget;
}
