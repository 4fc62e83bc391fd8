import { status as GrpcStatus } from "@grpc/grpc-js";
import { WebhookEndpointStatus } from "@rms/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestCore, type TestCore } from "../testutil/harness.js";
import { decryptSecret, isEndpointSecret, masterKey, publicKeyOf } from "../webhooks/index.js";
import { ENDPOINTS_PER_TENANT, type WebhookEndpointDocument } from "./model.js";

type Tenant = { accountId: string; livemode: boolean };

const keyring = { primary: masterKey(Buffer.alloc(32, 7)) };
let t: TestCore;
beforeAll(async () => {
  t = await startTestCore({ settings: { secretKeyring: keyring, webhookAllowPrivate: false } });
});
afterAll(() => t.stop());

const URL = "https://hooks.example.com/rms";
const stored = (id: string) => t.db.collection<WebhookEndpointDocument>("webhook_endpoints").findOne({ _id: id });
const create = (tenant: Tenant, fields: Record<string, unknown> = {}, key?: string) =>
  t.webhookEndpoints.createWebhookEndpoint({ tenant, url: URL, enabledEvents: ["*"], ...fields }, key ? { metadata: { "idempotency-key": key } } : {});

describe("CreateWebhookEndpoint", () => {
  it("answers the endpoint with its secret once; the stored document holds it sealed, never in clear", async () => {
    const { test: tenant } = await t.newAccount();
    const { webhookEndpoint: we } = await create(tenant, { description: "ops", metadata: [{ key: "team", value: "a" }] });
    expect(we?.id).toMatch(/^we_[0-9A-Za-z]{22}$/);
    expect(we?.status).toBe(WebhookEndpointStatus.ENABLED);
    expect(we?.url).toBe("https://hooks.example.com/rms");
    expect(isEndpointSecret(we!.secret!)).toBe(true);
    const doc = await stored(we!.id);
    expect(JSON.stringify(doc)).not.toContain("whsec_");
    expect(JSON.stringify(doc)).not.toContain(we!.secret!.slice(6));
    expect(doc?.secrets).toHaveLength(1);
    expect(decryptSecret(doc!.secrets[0]!.sealed, keyring, we!.id)).toBe(we!.secret);
    // Sealed with the endpoint id as context: it does not open for another endpoint.
    expect(() => decryptSecret(doc!.secrets[0]!.sealed, keyring, "we_other")).toThrow();
    const { webhookEndpoint: read } = await t.webhookEndpoints.getWebhookEndpoint({ tenant, id: we!.id });
    expect(read?.secret).toBeUndefined();
    expect(read?.description).toBe("ops");
  });

  it.each([
    ["http url", { url: "http://hooks.example.com/" }, "url_invalid", "url"],
    ["loopback url", { url: "https://127.0.0.1/x" }, "url_invalid", "url"],
    ["local name", { url: "https://localhost/x" }, "url_invalid", "url"],
    ["an empty url", { url: "" }, "parameter_invalid_empty", "url"],
    ["no enabled events", { enabledEvents: [] }, "parameter_missing", "enabled_events"],
    ["unknown event type", { enabledEvents: ["resource.created", "resource.exploded"] }, "parameter_invalid", "enabled_events"],
    ["a wildcard prefix", { enabledEvents: ["resource.*"] }, "parameter_invalid", "enabled_events"],
    ["unknown status", { status: 7 as WebhookEndpointStatus }, "parameter_invalid", "status"],
    ["501 code points of description", { description: "é".repeat(501) }, "string_too_long", "description"],
    ["metadata value of an object's size", { metadata: [{ key: "k", value: "v".repeat(501) }] }, "metadata_invalid", "metadata[k]"],
  ])("refuses %s with INVALID_ARGUMENT and writes nothing", async (_label, fields, code, param) => {
    const { test: tenant } = await t.newAccount();
    await expect(create(tenant, fields)).rejects.toMatchObject({ grpcCode: GrpcStatus.INVALID_ARGUMENT, code, param });
    expect(await t.db.collection("webhook_endpoints").countDocuments({ account: tenant.accountId })).toBe(0);
  });

  it("keeps known types once each, in the order given; an empty description is none", async () => {
    const { test: tenant } = await t.newAccount();
    const { webhookEndpoint: we } = await create(tenant, { enabledEvents: ["job.failed", "resource.created", "job.failed"], description: "" });
    expect(we?.enabledEvents).toEqual(["job.failed", "resource.created"]);
    expect(we?.description).toBeUndefined();
  });

  it("replays an Idempotency-Key: one endpoint, the same id and a secret that opens its stored one", async () => {
    const { test: tenant } = await t.newAccount();
    const first = (await create(tenant, {}, "key-1")).webhookEndpoint!;
    const again = (await create(tenant, {}, "key-1")).webhookEndpoint!;
    expect(again.id).toBe(first.id);
    expect(again.secret).toBe(first.secret);
    await expect(create(tenant, { description: "other" }, "key-1")).rejects.toMatchObject({ code: "idempotency_key_reused" });
    expect(await t.db.collection("webhook_endpoints").countDocuments({ account: tenant.accountId })).toBe(1);
  });
});

describe("the limit of 16 endpoints per account and mode", () => {
  it("holds under 24 concurrent creates: exactly 16 succeed, each in its own slot, the rest are limit_exceeded", async () => {
    const { test: tenant, live } = await t.newAccount();
    const results = await Promise.allSettled(Array.from({ length: 24 }, () => create(tenant)));
    const made = results.filter((r) => r.status === "fulfilled");
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    expect(made).toHaveLength(ENDPOINTS_PER_TENANT);
    for (const r of refused) expect(r.reason).toMatchObject({ grpcCode: GrpcStatus.INVALID_ARGUMENT, code: "limit_exceeded" });
    const slots = (await t.db.collection<WebhookEndpointDocument>("webhook_endpoints").find({ account: tenant.accountId, livemode: false }).toArray()).map(
      (d) => d.slot,
    );
    expect(slots.sort((a, b) => a - b)).toEqual([...Array(16).keys()]);
    // The other mode has its own 16.
    await expect(create(live)).resolves.toBeDefined();
  });

  it("a delete frees its slot at once, and the next create takes it", async () => {
    const { test: tenant } = await t.newAccount();
    const made = [];
    for (let i = 0; i < ENDPOINTS_PER_TENANT; i++) made.push((await create(tenant)).webhookEndpoint!);
    await expect(create(tenant)).rejects.toMatchObject({ code: "limit_exceeded" });
    const victim = made[5]!;
    const slot = (await stored(victim.id))!.slot;
    await expect(t.webhookEndpoints.deleteWebhookEndpoint({ tenant, id: victim.id })).resolves.toEqual(expect.objectContaining({ id: victim.id }));
    expect(await stored(victim.id)).toBeNull();
    const next = (await create(tenant)).webhookEndpoint!;
    expect((await stored(next.id))!.slot).toBe(slot);
    await expect(create(tenant)).rejects.toMatchObject({ code: "limit_exceeded" });
  });

  it("a retried create of a full account still replays its first result, not the limit", async () => {
    const { test: tenant } = await t.newAccount();
    const first = (await create(tenant, {}, "k0")).webhookEndpoint!;
    for (let i = 1; i < ENDPOINTS_PER_TENANT; i++) await create(tenant);
    expect((await create(tenant, {}, "k0")).webhookEndpoint?.id).toBe(first.id);
  });
});

describe("Get, Update, Delete, List", () => {
  it("finds nothing across accounts or modes", async () => {
    const a = await t.newAccount();
    const b = await t.newAccount();
    const we = (await create(a.test)).webhookEndpoint!;
    for (const tenant of [a.live, b.test]) {
      await expect(t.webhookEndpoints.getWebhookEndpoint({ tenant, id: we.id })).rejects.toMatchObject({
        grpcCode: GrpcStatus.NOT_FOUND,
        code: "resource_missing",
      });
      await expect(t.webhookEndpoints.updateWebhookEndpoint({ tenant, id: we.id, description: "x" })).rejects.toMatchObject({ code: "resource_missing" });
      await expect(t.webhookEndpoints.rotateWebhookEndpointSecret({ tenant, id: we.id })).rejects.toMatchObject({ code: "resource_missing" });
      await expect(t.webhookEndpoints.deleteWebhookEndpoint({ tenant, id: we.id })).rejects.toMatchObject({ code: "resource_missing" });
    }
    await expect(t.webhookEndpoints.getWebhookEndpoint({ tenant: a.test, id: we.id })).resolves.toBeDefined();
  });

  it("updates the given fields only; an empty description clears it; metadata merges; re-enabling clears disabled_reason", async () => {
    const { test: tenant } = await t.newAccount();
    const we = (
      await create(tenant, {
        description: "d",
        metadata: [
          { key: "a", value: "1" },
          { key: "b", value: "2" },
        ],
      })
    ).webhookEndpoint!;
    const { webhookEndpoint: updated } = await t.webhookEndpoints.updateWebhookEndpoint({
      tenant,
      id: we.id,
      url: "https://other.example.com/h",
      enabledEvents: { types: ["resource.deleted"] },
      status: WebhookEndpointStatus.DISABLED,
      metadata: [
        { key: "a", value: "" },
        { key: "c", value: "3" },
      ],
    });
    expect(updated).toMatchObject({
      url: "https://other.example.com/h",
      enabledEvents: ["resource.deleted"],
      status: WebhookEndpointStatus.DISABLED,
      description: "d",
    });
    expect(updated?.metadata.map((m) => [m.key, m.value])).toEqual([
      ["b", "2"],
      ["c", "3"],
    ]);
    expect(updated?.secret).toBeUndefined();
    await t.db.collection<WebhookEndpointDocument>("webhook_endpoints").updateOne({ _id: we.id }, { $set: { disabled_reason: "gone" } });
    const { webhookEndpoint: cleared } = await t.webhookEndpoints.updateWebhookEndpoint({
      tenant,
      id: we.id,
      description: "",
      status: WebhookEndpointStatus.ENABLED,
    });
    expect(cleared?.description).toBeUndefined();
    expect((await stored(we.id))?.disabled_reason).toBeNull();
    await expect(t.webhookEndpoints.updateWebhookEndpoint({ tenant, id: we.id, enabledEvents: { types: [] } })).rejects.toMatchObject({
      code: "parameter_missing",
      param: "enabled_events",
    });
    await expect(t.webhookEndpoints.updateWebhookEndpoint({ tenant, id: we.id, url: "ftp://x.example.com/" })).rejects.toMatchObject({
      code: "url_invalid",
      param: "url",
    });
    // `url=` on an update is an attempt to unset it, not a missing param.
    await expect(t.webhookEndpoints.updateWebhookEndpoint({ tenant, id: we.id, url: "" })).rejects.toMatchObject({
      code: "parameter_invalid_empty",
      param: "url",
    });
  });

  it("lists newest first with the standard cursors; a deleted id still works as a cursor", async () => {
    const { test: tenant } = await t.newAccount();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await create(tenant)).webhookEndpoint!.id);
    const newest = [...ids].reverse();
    const page1 = await t.webhookEndpoints.listWebhookEndpoints({ tenant, limit: 2 });
    expect(page1.webhookEndpoints.map((w) => w.id)).toEqual(newest.slice(0, 2));
    expect(page1.hasMore).toBe(true);
    expect(page1.webhookEndpoints.every((w) => w.secret === undefined)).toBe(true);
    await t.webhookEndpoints.deleteWebhookEndpoint({ tenant, id: newest[1]! });
    const page2 = await t.webhookEndpoints.listWebhookEndpoints({ tenant, limit: 2, startingAfter: newest[1]! });
    expect(page2.webhookEndpoints.map((w) => w.id)).toEqual(newest.slice(2, 4));
    const before = await t.webhookEndpoints.listWebhookEndpoints({ tenant, limit: 10, endingBefore: newest[3]! });
    expect(before.webhookEndpoints.map((w) => w.id)).toEqual([newest[0], newest[2]]);
    await expect(t.webhookEndpoints.listWebhookEndpoints({ tenant, startingAfter: "res_0000000000000000000000" })).rejects.toMatchObject({
      code: "parameter_invalid",
    });
  });
});

describe("RotateWebhookEndpointSecret", () => {
  it("puts the new secret first and keeps the old one until now + expires_in", async () => {
    const { test: tenant } = await t.newAccount();
    const we = (await create(tenant)).webhookEndpoint!;
    const before = Date.now();
    const { webhookEndpoint: rotated } = await t.webhookEndpoints.rotateWebhookEndpointSecret({ tenant, id: we.id, expiresIn: 3600n });
    const after = Date.now();
    expect(isEndpointSecret(rotated!.secret!)).toBe(true);
    expect(rotated?.secret).not.toBe(we.secret);
    const doc = (await stored(we.id))!;
    expect(doc.secrets.map((s) => decryptSecret(s.sealed, keyring, we.id))).toEqual([rotated!.secret, we.secret]);
    expect(doc.secrets[0]!.expires_at).toBeNull();
    expect(doc.secrets[1]!.expires_at).toBeGreaterThanOrEqual(before + 3_600_000);
    expect(doc.secrets[1]!.expires_at).toBeLessThanOrEqual(after + 3_600_000);
    expect(JSON.stringify(doc)).not.toContain("whsec_");
  });

  it("defaults to a day of grace; 0 drops the old secrets at once; out of range is refused", async () => {
    const { test: tenant } = await t.newAccount();
    const we = (await create(tenant)).webhookEndpoint!;
    const before = Date.now();
    await t.webhookEndpoints.rotateWebhookEndpointSecret({ tenant, id: we.id });
    expect((await stored(we.id))!.secrets[1]!.expires_at).toBeGreaterThanOrEqual(before + 86_400_000);
    const { webhookEndpoint: last } = await t.webhookEndpoints.rotateWebhookEndpointSecret({ tenant, id: we.id, expiresIn: 0n });
    const doc = (await stored(we.id))!;
    expect(doc.secrets).toHaveLength(1);
    expect(decryptSecret(doc.secrets[0]!.sealed, keyring, we.id)).toBe(last!.secret);
    for (const expiresIn of [-1n, 604_801n]) {
      await expect(t.webhookEndpoints.rotateWebhookEndpointSecret({ tenant, id: we.id, expiresIn })).rejects.toMatchObject({
        code: "parameter_invalid",
        param: "expires_in",
      });
    }
  });

  it("keeps at most five secrets however often it is rotated", async () => {
    const { test: tenant } = await t.newAccount();
    const we = (await create(tenant)).webhookEndpoint!;
    for (let i = 0; i < 8; i++) await t.webhookEndpoints.rotateWebhookEndpointSecret({ tenant, id: we.id, expiresIn: 604_800n });
    expect((await stored(we.id))!.secrets).toHaveLength(5);
  });
});

describe("signature_scheme v1a", () => {
  const publicKeyPattern = /^whpk_[A-Za-z0-9+/]{43}=$/;

  it("creates an Ed25519 key pair: the answer carries the public key and no secret, the private key is sealed at rest like a whsec_", async () => {
    const { test: tenant } = await t.newAccount();
    const { webhookEndpoint: we } = await create(tenant, { signatureScheme: "v1a" });
    expect(we?.signatureScheme).toBe("v1a");
    expect(we?.secret).toBeUndefined();
    expect(we?.publicKey).toMatch(publicKeyPattern);
    const doc = (await stored(we!.id))!;
    expect(doc.secrets).toEqual([{ sealed: expect.stringMatching(/^enc1\./), expires_at: null, scheme: "v1a", public_key: we!.publicKey }]);
    expect(JSON.stringify(doc)).not.toMatch(/whsk_|whsec_/);
    // The sealed key opens (with the endpoint id as context) to the private half of that public key.
    const privateKey = decryptSecret(doc.secrets[0]!.sealed, keyring, we!.id);
    expect(privateKey).toMatch(/^whsk_[A-Za-z0-9+/]{43}=$/);
    expect(publicKeyOf(privateKey)).toBe(we!.publicKey);
    expect(() => decryptSecret(doc.secrets[0]!.sealed, keyring, "we_other")).toThrow();
    // Reads show the public key, never a secret; a v1 endpoint shows none.
    const { webhookEndpoint: read } = await t.webhookEndpoints.getWebhookEndpoint({ tenant, id: we!.id });
    expect(read).toMatchObject({ signatureScheme: "v1a", publicKey: we!.publicKey });
    expect(read?.secret).toBeUndefined();
    const { webhookEndpoints: listed } = await t.webhookEndpoints.listWebhookEndpoints({ tenant });
    expect(listed.map((e) => [e.signatureScheme, e.publicKey, e.secret])).toEqual([["v1a", we!.publicKey, undefined]]);
    const v1 = (await create(tenant)).webhookEndpoint!;
    expect([v1.signatureScheme, v1.publicKey]).toEqual(["v1", undefined]);
  });

  it("a replayed create shows the public key again, never the private key; the scheme is part of the request", async () => {
    const { test: tenant } = await t.newAccount();
    const first = (await create(tenant, { signatureScheme: "v1a" }, "v1a-key")).webhookEndpoint!;
    const again = (await create(tenant, { signatureScheme: "v1a" }, "v1a-key")).webhookEndpoint!;
    expect([again.id, again.publicKey, again.secret]).toEqual([first.id, first.publicKey, undefined]);
    await expect(create(tenant, {}, "v1a-key")).rejects.toMatchObject({ code: "idempotency_key_reused" });
  });

  it("rotates within v1a by default, and moves between schemes when asked; the previous keys keep signing in their own scheme", async () => {
    const { test: tenant } = await t.newAccount();
    const we = (await create(tenant, { signatureScheme: "v1a" })).webhookEndpoint!;
    const same = (await t.webhookEndpoints.rotateWebhookEndpointSecret({ tenant, id: we.id, expiresIn: 3600n })).webhookEndpoint!;
    expect([same.signatureScheme, same.secret]).toEqual(["v1a", undefined]);
    expect(same.publicKey).toMatch(publicKeyPattern);
    expect(same.publicKey).not.toBe(we.publicKey);

    const toV1 = (await t.webhookEndpoints.rotateWebhookEndpointSecret({ tenant, id: we.id, expiresIn: 3600n, signatureScheme: "v1" })).webhookEndpoint!;
    expect(toV1.signatureScheme).toBe("v1");
    expect(isEndpointSecret(toV1.secret!)).toBe(true);
    expect(toV1.publicKey).toBeUndefined();
    const doc = (await stored(we.id))!;
    expect(doc.secrets.map((s) => [s.scheme ?? "v1", s.public_key ?? null])).toEqual([
      ["v1", null],
      ["v1a", same.publicKey],
      ["v1a", we.publicKey],
    ]);

    const back = (await t.webhookEndpoints.rotateWebhookEndpointSecret({ tenant, id: we.id, expiresIn: 0n, signatureScheme: "v1a" })).webhookEndpoint!;
    expect([back.signatureScheme, back.secret]).toEqual(["v1a", undefined]);
    expect((await stored(we.id))!.secrets).toEqual([{ sealed: expect.any(String), expires_at: null, scheme: "v1a", public_key: back.publicKey }]);
  });

  it("refuses an unknown scheme on create and rotate", async () => {
    const { test: tenant } = await t.newAccount();
    await expect(create(tenant, { signatureScheme: "v2" })).rejects.toMatchObject({ code: "parameter_invalid", param: "signature_scheme" });
    const we = (await create(tenant)).webhookEndpoint!;
    await expect(t.webhookEndpoints.rotateWebhookEndpointSecret({ tenant, id: we.id, signatureScheme: "hmac" })).rejects.toMatchObject({
      code: "parameter_invalid",
      param: "signature_scheme",
    });
  });
});
