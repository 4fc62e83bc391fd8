// Who a call comes from, as the caller table and the guard find it from its metadata and its certificate's names.
import { Metadata } from "@grpc/grpc-js";
import { keyHash } from "@rms/proto";
import { expect, it } from "vitest";
import { METHOD_CALLERS, SERVED_METHODS } from "../domains.js";
import { builtInClients } from "./built-in.js";
import { parseClientsFile } from "./file.js";
import { callerGuard } from "./guard.js";
import { CallerTable } from "./table.js";

const table = new CallerTable(
  builtInClients({ operator: "operator-token-0123456789", gateway: "gateway-token-0123456789" }, METHOD_CALLERS),
  parseClientsFile(
    JSON.stringify({
      clients: [
        {
          name: "billing",
          token_sha256: [keyHash("billing-token-0123456789")],
          tls_san: ["billing.internal"],
          methods: ["rms.v1.EventService/*"],
          accounts: "*",
          modes: ["test"],
        },
      ],
    }),
    SERVED_METHODS,
    "clients.json",
  ),
);

const labelOf = (authorization: string | undefined, names: string[] = []) => {
  const metadata = new Metadata();
  if (authorization !== undefined) metadata.set("authorization", authorization);
  const guard = callerGuard(table, { reflectionOpen: true });
  const sans = names.length ? `${names.map((n) => `DNS:${n}`).join(", ")}` : undefined;
  return guard.identify(metadata, { getAuthContext: () => (sans ? { sslPeerCertificate: { subjectaltname: sans } as never } : {}) }).label;
};

it("names each client by its token, or by its certificate when it sends none", () => {
  expect(labelOf("Bearer operator-token-0123456789")).toBe("operator");
  expect(labelOf("Bearer gateway-token-0123456789")).toBe("gateway");
  expect(labelOf("Bearer billing-token-0123456789")).toBe("billing");
  expect(labelOf(undefined, ["other.internal", "billing.internal"])).toBe("billing");
});

it("tells no credential (anonymous) from one that names nobody (unknown); a token sent decides over the certificate", () => {
  expect(labelOf(undefined)).toBe("anonymous");
  expect(labelOf("Bearer not-a-known-token-0123")).toBe("unknown");
  expect(labelOf("Basic b3BlcmF0b3I6eA==")).toBe("unknown");
  expect(labelOf(undefined, ["stranger.internal"])).toBe("unknown");
  expect(labelOf("Bearer not-a-known-token-0123", ["billing.internal"])).toBe("unknown");
});

it("takes a new file whole, or keeps what it had", () => {
  const copy = new CallerTable(builtInClients({ operator: "operator-token-0123456789" }, METHOD_CALLERS));
  expect(copy.clients.map((c) => c.name)).toEqual(["operator"]);
  const clash = parseClientsFile(
    JSON.stringify({
      clients: [{ name: "x", token_sha256: [keyHash("operator-token-0123456789")], methods: ["rms.v1.EventService/*"], accounts: "*", modes: ["test"] }],
    }),
    SERVED_METHODS,
    "f",
  );
  expect(() => copy.replace(clash)).toThrow(/also operator's/);
  expect(copy.clients.map((c) => c.name)).toEqual(["operator"]);
});
