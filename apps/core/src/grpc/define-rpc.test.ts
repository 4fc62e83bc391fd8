import { create } from "@bufbuild/protobuf";
import { status as GrpcStatus, Metadata } from "@grpc/grpc-js";
import {
  CreateResourceRequestSchema,
  EventService,
  GetEventRequestSchema,
  IDEMPOTENCY_KEY_METADATA,
  REQUEST_ID_METADATA,
  standardMessageOf,
  type CallContext,
  type CreateResourceRequest,
  type GetEventRequest,
} from "@rms/proto";
import { describe, expect, it } from "vitest";
import { errors } from "../errors.js";
import { DEADLINE_MARGIN_MS } from "../budget.js";
import { defineRpcs, rpc, type Call, type PresentedKeyCheck } from "./define-rpc.js";

const tenant = { accountId: "acct_1", livemode: true };
const getEvent = (id: string): GetEventRequest => create(GetEventRequestSchema, { tenant, id });
const request = (init: { name?: string; tenant?: typeof tenant } = { tenant }): CreateResourceRequest => create(CreateResourceRequestSchema, init);

function contextOf({ deadline = Infinity, metadata = {} }: { deadline?: number; metadata?: Record<string, string> } = {}): CallContext {
  const md = new Metadata();
  for (const [key, value] of Object.entries(metadata)) md.set(key, value);
  return { method: "/rms.v1.ResourceService/CreateResource", metadata: md, signal: new AbortController().signal, deadline, caller: null };
}

/** A record of the steps a call went through, in order, and a key check that says yes or refuses. */
function recorder(refuse = false) {
  const steps: string[] = [];
  const checkKey: PresentedKeyCheck = async (_context, checked, options) => {
    steps.push(`key ${checked.account} ${options?.timeoutMS === undefined ? "unbounded" : "bounded"}`);
    await Promise.resolve();
    if (refuse) throw errors.unauthenticated("api_key_revoked", "This API key has been revoked.");
    steps.push("key ok");
  };
  return { steps, checkKey };
}

const outcome = (promise: Promise<unknown>) =>
  promise.then(
    () => "ok",
    (error: { code: string }) => error.code,
  );

describe("a declared write", () => {
  const declared = (steps: string[], result: unknown = { doc: "d" }) =>
    rpc.write({
      parse: (req: CreateResourceRequest) => {
        steps.push("parse");
        if (req.name === "bad") throw errors.invalid("parameter_invalid", "bad name", "name");
        return req.name;
      },
      write: async (name, call: Call) => {
        steps.push(`write ${name} ${call.tenant.account}`);
        return result as { doc: string } | { conflict: true };
      },
      reply: ({ doc }) => {
        steps.push("reply");
        return { resource: { id: doc } };
      },
    });

  it("runs tenant, parse, presented key, write, reply: in this order, each only if the one before passed", async () => {
    const ok = recorder();
    expect(await declared(ok.steps).run(request({ tenant, name: "n" }), contextOf(), ok.checkKey)).toEqual({ resource: { id: "d" } });
    expect(ok.steps).toEqual(["parse", "key acct_1 unbounded", "key ok", "write n acct_1", "reply"]);

    const noTenant = recorder();
    expect(await outcome(declared(noTenant.steps).run(request({ name: "bad" }), contextOf(), noTenant.checkKey))).toBe("parameter_missing");
    expect(noTenant.steps).toEqual([]);

    const badInput = recorder(true);
    expect(await outcome(declared(badInput.steps).run(request({ tenant, name: "bad" }), contextOf(), badInput.checkKey))).toBe("parameter_invalid");
    expect(badInput.steps).toEqual(["parse"]);

    const refused = recorder(true);
    expect(await outcome(declared(refused.steps).run(request({ tenant, name: "n" }), contextOf(), refused.checkKey))).toBe("api_key_revoked");
    expect(refused.steps).toEqual(["parse", "key acct_1 unbounded"]);
  });

  it("maps a store's idempotency conflict to idempotency_key_reused, in the catalogue's words, and never replies", async () => {
    const { steps, checkKey } = recorder();
    const failure = await declared(steps, { conflict: true })
      .run(request({ tenant, name: "n" }), contextOf(), checkKey)
      .catch((error: unknown) => error);
    expect(failure).toMatchObject({
      grpcCode: GrpcStatus.INVALID_ARGUMENT,
      type: "idempotency_error",
      code: "idempotency_key_reused",
      message: standardMessageOf("idempotency_key_reused"),
    });
    expect(steps).not.toContain("reply");
  });

  it("gives the key check and the write the caller's deadline less the margin, and starts nothing once it is spent", async () => {
    const seen: (number | undefined)[] = [];
    const timed = rpc.write({
      write: async (_req: CreateResourceRequest, { budget }) => {
        budget.beforeWrite();
        seen.push(budget.db().timeoutMS);
        return {};
      },
      reply: () => ({}),
    });
    const checkKey: PresentedKeyCheck = async (_context, _tenant, options) => void seen.push(options?.timeoutMS);
    await timed.run(request(), contextOf({ deadline: Date.now() + 60_000 }), checkKey);
    for (const ms of seen) expect(ms).toBeGreaterThan(60_000 - DEADLINE_MARGIN_MS - 1_000);
    for (const ms of seen) expect(ms).toBeLessThanOrEqual(60_000 - DEADLINE_MARGIN_MS);

    const spent = recorder();
    const late = contextOf({ deadline: Date.now() + DEADLINE_MARGIN_MS / 2 });
    expect(await outcome(declared(spent.steps).run(request({ tenant, name: "n" }), late, spent.checkKey))).toBe("service_unavailable");
    expect(spent.steps).toEqual(["parse"]);
  });

  it("hands the write the request id and Idempotency-Key the caller sent", async () => {
    const recorded = rpc.write({ write: async (_req: CreateResourceRequest, call) => call.info, reply: (info) => info });
    const info = await recorded.run(
      request(),
      contextOf({ metadata: { [REQUEST_ID_METADATA]: "req_1", [IDEMPOTENCY_KEY_METADATA]: "k-1" } }),
      recorder().checkKey,
    );
    expect(info).toEqual({ requestId: "req_1", idempotencyKey: "k-1" });
  });
});

describe("a declared read", () => {
  const declared = (steps: string[], doc: string | null = "d") =>
    rpc.read({
      load: async ({ id }: GetEventRequest) => {
        steps.push(`load ${id}`);
        await Promise.resolve();
        await Promise.resolve();
        steps.push("loaded");
        return doc;
      },
      reply: (loaded, { id }) => {
        if (loaded === null) throw errors.notFound("thing", id);
        return { id: loaded };
      },
    });

  it("loads alongside the presented-key check and answers once both are done", async () => {
    const { steps, checkKey } = recorder();
    expect(await declared(steps).run(getEvent("x"), contextOf(), checkKey)).toEqual({ id: "d" });
    expect(steps.slice(0, 2)).toEqual(["load x", "key acct_1 unbounded"]);
    expect(steps).toHaveLength(4);
  });

  it("drops what it loaded when the key is refused: the refusal wins over a missing object", async () => {
    const { steps, checkKey } = recorder(true);
    expect(await outcome(declared(steps, null).run(getEvent("x"), contextOf(), checkKey))).toBe("api_key_revoked");
    expect(await outcome(declared([], null).run(getEvent("x"), contextOf(), recorder().checkKey))).toBe("resource_missing");
  });

  it("starts neither the read nor the key check once the deadline's budget is spent", async () => {
    const { steps, checkKey } = recorder();
    const late = contextOf({ deadline: Date.now() + DEADLINE_MARGIN_MS / 2 });
    expect(await outcome(declared(steps).run(getEvent("x"), late, checkKey))).toBe("service_unavailable");
    expect(steps).toEqual([]);
  });
});

describe("a service's declarations", () => {
  it("serve every method of the service, each checking the key with the service's check; a server-streaming one is its handler", async () => {
    const { steps, checkKey } = recorder();
    async function* watchEvents() {
      yield { events: [] };
    }
    const service = defineRpcs(EventService, checkKey, {
      getEvent: rpc.read({ load: async ({ id }) => id, reply: (id) => ({ event: { id } }) }),
      listEvents: rpc.read({ load: async () => [], reply: () => ({ events: [], hasMore: false }) }),
      readEventLog: rpc.read({ load: async () => null, reply: () => ({}) }),
      watchEvents,
    });
    expect(Object.keys(service).sort()).toEqual(["getEvent", "listEvents", "readEventLog", "watchEvents"]);
    expect(service.watchEvents).toBe(watchEvents);
    expect(await service.getEvent(getEvent("evt_1"), contextOf())).toEqual({ event: { id: "evt_1" } });
    expect(steps).toEqual(["key acct_1 unbounded", "key ok"]);
  });

  it("do not compile with a method missing or misspelled", () => {
    const { checkKey } = recorder();
    const getEvent = rpc.read({ load: async () => null, reply: () => ({}) });
    async function* watchEvents() {}
    // @ts-expect-error listEvents is missing
    expect(() => defineRpcs(EventService, checkKey, { getEvent, readEventLog: getEvent, watchEvents })).toThrow(
      "no declaration for rms.v1.EventService.ListEvents",
    );
    // @ts-expect-error listEvent is no method of EventService
    expect(() => defineRpcs(EventService, checkKey, { getEvent, readEventLog: getEvent, watchEvents, listEvent: getEvent })).toThrow("no declaration");
  });
});
