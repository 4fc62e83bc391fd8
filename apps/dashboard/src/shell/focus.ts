import { useRouter } from "@tanstack/react-router";
import { useEffect, useRef } from "react";

/** Moves the keyboard's focus to the main region. */
export function focusMain() {
  document.getElementById("main")?.focus({ preventScroll: true });
}

/** Moves the focus to the main region if the element that had it went away (the browser left it on the document). */
function focusMainIfLost() {
  const active = document.activeElement;
  if (active === null || active === document.body || !active.isConnected) focusMain();
}

/**
 * After a move to another page (or signing in or out), puts the focus on the new page's main region when the
 * element that had it went away with the old page (a link in a table, the sign-in form): otherwise the next Tab
 * starts again at the top of the document. Focus still on the navigation stays there.
 */
export function useFocusAfterNavigation(signedIn: boolean) {
  const router = useRouter();
  useEffect(
    () =>
      router.subscribe("onRendered", (event) => {
        if (event.fromLocation && event.pathChanged) focusMainIfLost();
      }),
    [router],
  );
  const first = useRef(true);
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs when the tab signs in or out
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    focusMainIfLost();
  }, [signedIn]);
}
