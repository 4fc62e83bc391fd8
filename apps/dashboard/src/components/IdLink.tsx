import { Link } from "@tanstack/react-router";
import { objectPage } from "../lib/jump";

/** Any object id as a link to that object's page; an id of a kind without a page is shown as code. */
export function IdLink({ id }: { id: string | null | undefined }) {
  if (!id) return <span>—</span>;
  const page = objectPage(id);
  if (!page) return <code className="id">{id}</code>;
  return (
    <Link to={page} params={{ id }} className="id">
      {id}
    </Link>
  );
}

/** The object ids a request log's path names (`/v1/resources/res_...`), each linked. */
export function idsInPath(path: string): string[] {
  return path.split("/").filter((part) => objectPage(part) !== null);
}
