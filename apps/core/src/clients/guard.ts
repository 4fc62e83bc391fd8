import { ServerInterceptingCall, type Metadata, type ServerInterceptingCallInterface, type ServerInterceptor } from "@grpc/grpc-js";
import { AUTHORIZATION_METADATA, bearerToken, catalogueError, type CallContext } from "@rms/proto";
import { errors } from "../errors.js";
import { mayCall, type CoreClient } from "./client.js";
import type { CallerTable, Identity } from "./table.js";

/** Server reflection's methods (v1 and v1alpha): open on loopback, to known clients only elsewhere. */
const REFLECTION_PATHS = new Set([
  "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
  "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
]);

/** The values of a verified client certificate's subject alternative names (`DNS:a, URI:b` gives `a`, `b`). */
export function certificateNames(call: Pick<ServerInterceptingCallInterface, "getAuthContext">): string[] {
  const names = call.getAuthContext()?.sslPeerCertificate?.subjectaltname;
  if (!names) return [];
  return names.split(",").map((entry) => entry.trim().replace(/^[A-Za-z ]+:/, ""));
}

/** How core finds and checks who calls (server.ts wires it): one identification per call, shared by every step. */
export interface CallerGuard {
  /**
   * The server interceptor: identifies the call once its metadata arrives (kept for the steps after it), and
   * refuses server reflection to an unidentified caller where reflection is not open. Put it after the metrics'
   * interceptor, so a refused call is still counted.
   */
  readonly interceptor: ServerInterceptor;
  /** Who an intercepted call comes from, found once per call (the metrics' interceptor asks too, before this one's turn). */
  identify(metadata: Metadata, call: Pick<ServerInterceptingCallInterface, "getAuthContext">): Identity;
  /** Who the call comes from, as identified when its metadata arrived (from the metadata alone for a call never intercepted). */
  identityOf(metadata: Metadata): Identity;
  /** The serve options' `authorize`: UNAUTHENTICATED for no known client, PERMISSION_DENIED for a method outside its list. */
  authorize(context: CallContext): CoreClient;
}

/** `reflectionOpen`: reflection answers anyone (core listens on loopback only); otherwise known clients only. */
export function callerGuard(table: CallerTable, { reflectionOpen }: { reflectionOpen: boolean }): CallerGuard {
  // One identification per call, found again by the call's metadata object (grpc-js hands the same one to the handler).
  const identities = new WeakMap<Metadata, Identity>();
  const identify = (metadata: Metadata, call: Pick<ServerInterceptingCallInterface, "getAuthContext"> | null): Identity => {
    let identity = identities.get(metadata);
    if (!identity) {
      // An `authorization` that is not a bearer token is a credential no entry has (`unknown`), not none.
      const presented = metadata.get(AUTHORIZATION_METADATA)[0];
      const token = presented === undefined ? null : (bearerToken(presented) ?? "");
      identity = table.identify(token, call ? certificateNames(call) : []);
      identities.set(metadata, identity);
    }
    return identity;
  };

  const interceptor: ServerInterceptor = (descriptor, call) => {
    const gated = !reflectionOpen && REFLECTION_PATHS.has(descriptor.path);
    return new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, pass) => {
            const identity = identify(metadata, call);
            if (!gated || identity.client) return pass(metadata);
            const refusal = catalogueError("admin_token_invalid", "Server reflection off loopback answers known clients only: send a client's token.");
            call.sendStatus({ code: refusal.grpcCode, details: refusal.message, metadata: refusal.toMetadata() });
          },
        }),
    });
  };

  const identityOf = (metadata: Metadata) => identify(metadata, null);

  return {
    interceptor,
    identify,
    identityOf,
    authorize(context) {
      const { client } = identityOf(context.metadata);
      if (!client) throw errors.unauthenticated("admin_token_invalid", "Missing or unknown credential: no client of core's caller table presents it.");
      if (!mayCall(client, context.method)) throw errors.permissionDenied("method_not_allowed", `The client ${client.name} may not call ${context.method}.`);
      return client;
    },
  };
}

/** The table's client a call's `authorize` found (null for a server without one, as in unit tests). */
export function clientOf(context: CallContext): CoreClient | null {
  return context.caller as CoreClient | null;
}
