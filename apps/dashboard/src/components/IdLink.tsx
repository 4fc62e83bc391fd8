import { Link } from "@tanstack/react-router";

/** Any object id as a link to that object's page; an id of a kind without a page is shown as code. */
export function IdLink({ id }: { id: string | null | undefined }) {
  if (!id) return <span>—</span>;
  const prefix = id.slice(0, id.indexOf("_"));
  switch (prefix) {
    case "res":
      return (
        <Link to="/resources/$id" params={{ id }} className="id">
          {id}
        </Link>
      );
    case "evt":
      return (
        <Link to="/events/$id" params={{ id }} className="id">
          {id}
        </Link>
      );
    case "we":
      return (
        <Link to="/webhooks/$id" params={{ id }} className="id">
          {id}
        </Link>
      );
    case "job":
      return (
        <Link to="/jobs/$id" params={{ id }} className="id">
          {id}
        </Link>
      );
    case "file":
      return (
        <Link to="/files/$id" params={{ id }} className="id">
          {id}
        </Link>
      );
    case "req":
      return (
        <Link to="/request-logs/$id" params={{ id }} className="id">
          {id}
        </Link>
      );
    default:
      return <code className="id">{id}</code>;
  }
}

/** The object ids a request log's path names (`/v1/resources/res_...`), each linked. */
export function idsInPath(path: string): string[] {
  return path.split("/").filter((part) => /^(res|evt|we|job|file|req)_[0-9A-Za-z]+$/.test(part));
}
