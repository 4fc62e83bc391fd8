import { useQueryClient } from "@tanstack/react-query";
import { createContext, useCallback, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from "react";
import { apiClient, type ApiFailure, type Client, whenSignedOut } from "../api/client";
import { type AccountOfKey, endSession, fetchAccount } from "../lib/account";
import { probeScopes } from "../lib/scopes";
import {
  forgetKey,
  fragmentAction,
  storeAccount,
  storedAccount,
  storedKey,
  storedScopes,
  storeKey,
  storeScopes,
  takeKeyFromAddressBar,
  takeLinkKey,
} from "../session";
import type { Scope } from "../vocabulary";

/** Why the tab is at sign-in: the API's words when it refused the key, or the user signed out. */
export interface SignOutReason {
  readonly message: string;
  readonly requestId: string | null;
}

export interface Auth {
  readonly key: string | null;
  /** Null while they are being learned (sign-in). */
  readonly scopes: readonly Scope[] | null;
  readonly client: Client;
  readonly reason: SignOutReason | null;
  /** The key's account and mode (null while learned, or when the server does not say). */
  readonly account: AccountOfKey | null;
  /** A sign-in link's key for which the user has not said yet whether to switch to it. */
  readonly linkKey: string | null;
  /** Why the key's scopes could not be learned (no answer came), or null. */
  readonly probeFailure: string | null;
  /** Asks again what the key may do, after a probe that got no answer. */
  retryProbe(): void;
  signIn(key: string): Promise<void>;
  /** Forgets the key; signing out of a dashboard session (no `reason`: the user's choice) ends the session too. */
  signOut(reason?: SignOutReason): void;
  /** Switches to the held link's key (true) or keeps the tab's key and drops the link's (false). */
  answerLink(switchTo: boolean): void;
  can(scope: Scope): boolean;
}

const AuthContext = createContext<Auth | null>(null);

export function useAuth(): Auth {
  const auth = useContext(AuthContext);
  if (!auth) throw new Error("useAuth outside AuthProvider");
  return auth;
}

export function AuthProvider({ children }: { children: ReactNode }) {
  const queryClient = useQueryClient();
  const [key, setKey] = useState<string | null>(() => storedKey());
  const [scopes, setScopes] = useState<readonly Scope[] | null>(() => (storedKey() ? storedScopes() : null));
  const [reason, setReason] = useState<SignOutReason | null>(null);
  const [account, setAccount] = useState<AccountOfKey | null>(() => (storedKey() ? storedAccount() : null));
  const [linkKey, setLinkKey] = useState<string | null>(() => takeLinkKey());
  /** Why the scopes could not be learned (no answer came); the layout offers to try again. */
  const [probeFailure, setProbeFailure] = useState<string | null>(null);
  const client = useMemo(() => apiClient(() => storedKey()), []);

  const signOut = useCallback(
    (why?: SignOutReason) => {
      // The user's sign-out of a session ends it at the API too (its key is refused from now on); a key the API
      // refused already needs nothing more.
      const key = storedKey();
      const session = storedAccount();
      if (!why && key && session?.dashboardSession) void endSession(key, session.apiKey);
      forgetKey();
      setKey(null);
      setScopes(null);
      setAccount(null);
      setReason(why ?? null);
      queryClient.clear();
    },
    [queryClient],
  );

  useEffect(() => {
    // Only a refusal of the tab's key signs out, the first one, and says why: a request still in flight must not
    // replace the API's message (the revoked key's) with its own, and one sent with a key the tab has left since (a
    // session signed out of, then another key signed in) is no word on the key it holds now.
    whenSignedOut((failure: ApiFailure, refusedKey: string) => {
      if (refusedKey === storedKey()) signOut({ message: failure.message, requestId: failure.requestId });
    });
  }, [signOut]);

  // The key whose scopes are being learned: one probe at a time per key (sign-in and the effect below both ask).
  const probing = useRef<string | null>(null);
  const learnScopes = useCallback(
    async (secret: string) => {
      if (probing.current === secret) return;
      probing.current = secret;
      setProbeFailure(null);
      try {
        const [learned, owner] = await Promise.all([probeScopes(secret), fetchAccount(secret)]);
        // Signed out (or switched) meanwhile: what was learned belongs to a key other than the tab's.
        if (storedKey() !== secret) return;
        storeAccount(owner);
        setAccount(owner);
        storeScopes(learned);
        setScopes(learned);
      } catch (error) {
        // Signed out (or switched) meanwhile: the answer is no word on the key the tab holds now. Else only the API's
        // refusal of the key signs out. No answer at all (the tab leaving the page mid-probe, the network) keeps the
        // key: forgetting it then would sign the tab out of the page it is going to.
        if (storedKey() !== secret) throw error;
        if ((error as { status?: number }).status === 401) {
          const body = (error as { body?: { error?: { message?: string; request_id?: string } } }).body;
          signOut({ message: body?.error?.message ?? (error as Error).message, requestId: body?.error?.request_id ?? null });
        } else {
          setProbeFailure(error instanceof Error ? error.message : String(error));
        }
        throw error;
      } finally {
        probing.current = null;
      }
    },
    [signOut],
  );

  // A key kept from before a reload, whose scopes were not learned yet.
  useEffect(() => {
    if (key && scopes === null && probeFailure === null) void learnScopes(key).catch(() => {});
  }, [key, scopes, probeFailure, learnScopes]);

  const signIn = useCallback(
    async (secret: string) => {
      storeKey(secret);
      setReason(null);
      setScopes(null);
      setKey(secret);
      await learnScopes(secret);
    },
    [learnScopes],
  );

  const answerLink = useCallback(
    (switchTo: boolean) => {
      const held = linkKey;
      setLinkKey(null);
      if (!switchTo || held === null) return;
      queryClient.clear();
      void signIn(held).catch(() => {});
    },
    [linkKey, queryClient, signIn],
  );

  // A sign-in link pasted into this tab while it is open changes only the fragment (no new load): its key signs in
  // when the tab has none, and otherwise waits for the user's answer; the key leaves the address bar in every case.
  useEffect(() => {
    const onHashChange = () => {
      const linked = takeKeyFromAddressBar();
      const action = fragmentAction(storedKey(), linked);
      if (action === "sign_in" && linked) void signIn(linked).catch(() => {});
      if (action === "ask") setLinkKey(linked);
    };
    window.addEventListener("hashchange", onHashChange);
    return () => window.removeEventListener("hashchange", onHashChange);
  }, [signIn]);

  const retryProbe = useCallback(() => setProbeFailure(null), []);
  const value = useMemo<Auth>(
    () => ({
      key,
      scopes,
      client,
      reason,
      account,
      linkKey,
      probeFailure,
      retryProbe,
      signIn,
      signOut,
      answerLink,
      can: (scope) => scopes?.includes(scope) ?? false,
    }),
    [key, scopes, client, reason, account, linkKey, probeFailure, retryProbe, signIn, signOut, answerLink],
  );
  return <AuthContext.Provider value={value}>{children}</AuthContext.Provider>;
}
