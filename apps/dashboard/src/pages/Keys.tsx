import { PageHeader } from "../components/Disclosure";
import { usePageTitle } from "../lib/title";

/** The account's keys and dashboard sessions. */
export function KeysPage() {
  usePageTitle("Keys");
  return (
    <div>
      <PageHeader title="API keys and sessions" />
    </div>
  );
}
