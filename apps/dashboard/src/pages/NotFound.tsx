import { Link } from "@tanstack/react-router";
import { usePageTitle } from "../lib/title";

export function NotFoundPage() {
  usePageTitle("No such page");
  return (
    <div>
      <h1>No such page</h1>
      <p>
        This address is not a page of the dashboard. <Link to="/">Go to the overview</Link>.
      </p>
    </div>
  );
}
