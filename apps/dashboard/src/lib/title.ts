import { useEffect } from "react";

export const APP_NAME = "rms dashboard";

/** The tab's title for a page: what it shows first, then the app (`evt_... · Event · rms dashboard`). */
export function titleOf(...parts: readonly (string | null | undefined)[]): string {
  return [...parts.filter((p): p is string => !!p), APP_NAME].join(" · ");
}

/** Sets the tab's title while the page is shown. */
export function usePageTitle(...parts: readonly (string | null | undefined)[]): void {
  const title = titleOf(...parts);
  useEffect(() => {
    document.title = title;
  }, [title]);
}
