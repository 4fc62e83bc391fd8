import { useAuth } from "../app/auth";
import { SignInPage } from "../pages/SignIn";
import { SwitchAccountPage } from "../pages/SwitchAccount";
import { useFocusAfterNavigation } from "./focus";
import { Layout } from "./Layout";

/**
 * The router's root: the sign-in page at any URL while the tab has no key, the question of a sign-in link for another
 * key while it waits for an answer, else the frame around the page the URL names.
 */
export function Root() {
  const auth = useAuth();
  useFocusAfterNavigation(auth.key !== null);
  if (!auth.key) return <SignInPage />;
  if (auth.linkKey) return <SwitchAccountPage linkKey={auth.linkKey} />;
  return <Layout />;
}
