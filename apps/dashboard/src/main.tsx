import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { RouterProvider } from "@tanstack/react-router";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { AuthProvider } from "./app/auth";
import { router } from "./router";
import { fragmentAction, holdLinkKey, storedKey, storeKey, takeKeyFromAddressBar } from "./session";
import "./styles.css";

// A sign-in link: the key is in the fragment (never sent to a server). Keep it in this tab's sessionStorage (or,
// when the tab is signed in with another key, in memory until the user says whether to switch) and take it out of
// the address bar and the history at once (a link pasted into a tab already open: auth.tsx).
const fragmentKey = takeKeyFromAddressBar();
const action = fragmentAction(storedKey(), fragmentKey);
if (action === "sign_in" && fragmentKey) storeKey(fragmentKey);
if (action === "ask" && fragmentKey) holdLinkKey(fragmentKey);

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // An API refusal is an answer, not a glitch: shown at once. The SDK itself retries what a retry can fix (the
      // network, 429 after its Retry-After, 5xx), so a query is not tried again on top of that.
      retry: false,
      refetchOnWindowFocus: false,
      staleTime: 2_000,
    },
  },
});

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <AuthProvider>
        <RouterProvider router={router} />
      </AuthProvider>
    </QueryClientProvider>
  </StrictMode>,
);
