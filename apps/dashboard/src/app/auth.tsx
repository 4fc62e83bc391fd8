import { useQueryClient } from "@tanstack/react-query";
import { createContext, useCallback, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from "react";
import { apiClient, type ApiFailure, type Client, whenSignedOut } from "../api/client";
import { probeScopes } from "../lib/scopes";
import { forgetKey, type Scope, storedKey, storedScopes, storeKey, storeScopes, takeKeyFromAddressBar } from "../session";

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
  /** Why the key's scopes could not be learned (no answer came), or null. */
  readonly probeFailure: string | null;
  /** Asks again what the key may do, after a probe that got no answer. */
  retryProbe(): void;
  signIn(key: string): Promise<void>;
  signOut(reason?: SignOutReason): void;
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
  /** Why the scopes could not be learned (no answer came); the layout offers to try again. */
  const [probeFailure, setProbeFailure] = useState<string | null>(null);
  const client = useMemo(() => apiClient(() => storedKey()), []);

  const signOut = useCallback(
    (why?: SignOutReason) => {
      forgetKey();
      setKey(null);
      setScopes(null);
      setReason(why ?? null);
      queryClient.clear();
    },
    [queryClient],
  );

  useEffect(() => {
    // Only the first refusal signs out and says why: a request still in flight, or one sent after the key was
    // forgotten (401 `api_key_missing`), must not replace the API's message (the revoked key's) with its own.
    whenSignedOut((failure: ApiFailure) => {
      if (storedKey()) signOut({ message: failure.message, requestId: failure.requestId });
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
        const learned = await probeScopes(secret);
        if (storedKey() !== secret) return;
        storeScopes(learned);
        setScopes(learned);
      } catch (error) {
        // Only the API's refusal of the key signs out. No answer at all (the tab leaving the page mid-probe, the
        // network) keeps the key: forgetting it then would sign the tab out of the page it is going to.
        if ((error as { status?: number }).status === 401) {
          const body = (error as { body?: { error?: { message?: string; request_id?: string } } }).body;
          signOut({ message: body?.error?.message ?? (error as Error).message, requestId: body?.error?.request_id ?? null });
        } else if (storedKey() === secret) {
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

  // A sign-in link pasted into this tab while it is open changes only the fragment (no new load): sign in with its
  // key, and take the key out of the address bar in every case.
  useEffect(() => {
    const onHashChange = () => {
      const linked = takeKeyFromAddressBar();
      if (linked && linked !== storedKey()) void signIn(linked).catch(() => {});
    };
    window.addEventListener("hashchange", onHashChange);
    return () => window.removeEventListener("hashchange", onHashChange);
  }, [signIn]);

  const retryProbe = useCallback(() => setProbeFailure(null), []);
  const value = useMemo<Auth>(
    () => ({ key, scopes, client, reason, probeFailure, retryProbe, signIn, signOut, can: (scope) => scopes?.includes(scope) ?? false }),
    [key, scopes, client, reason, probeFailure, retryProbe, signIn, signOut],
  );
  return <AuthContext.Provider value={value}>{children}</AuthContext.Provider>;
}
