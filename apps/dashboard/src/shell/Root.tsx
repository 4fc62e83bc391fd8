import { useAuth } from "../app/auth";
import { SignInPage } from "../pages/SignIn";
import { useFocusAfterNavigation } from "./focus";
import { Layout } from "./Layout";

/** The router's root: the sign-in page at any URL while the tab has no key, else the frame around the page the URL names. */
export function Root() {
  const auth = useAuth();
  useFocusAfterNavigation(auth.key !== null);
  if (!auth.key) return <SignInPage />;
  return <Layout />;
}
