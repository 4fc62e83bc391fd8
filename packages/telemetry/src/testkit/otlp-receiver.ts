import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

/** One span as an OTLP/HTTP JSON export carries it, with its resource's `service.name`. */
export interface ReceivedSpan {
  readonly service: string;
  readonly traceId: string;
  readonly spanId: string;
  /** Empty for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  /** OTLP's SpanKind number: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  readonly kind: number;
  readonly attributes: Readonly<Record<string, string | number | boolean>>;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  readonly statusCode: number;
  /** The span contexts it links to (not its parents), e.g. a client's trace kept beside a new root. */
  readonly links: readonly { readonly traceId: string; readonly spanId: string }[];
}

/** An in-process OTLP/HTTP receiver (JSON encoding: OTEL_EXPORTER_OTLP_PROTOCOL=http/json) for tests and the bench. */
export interface OtlpReceiver {
  /** For OTEL_EXPORTER_OTLP_ENDPOINT (the exporter appends `/v1/traces`). */
  readonly endpoint: string;
  /** Every span received so far. */
  spans(): readonly ReceivedSpan[];
  /** Export requests answered (whatever their encoding). */
  readonly requests: number;
  close(): Promise<void>;
}

type AnyValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
interface KeyValue {
  key: string;
  value?: AnyValue;
}
interface ExportRequest {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind?: number;
        attributes?: KeyValue[];
        status?: { code?: number };
        links?: { traceId: string; spanId: string }[];
      }[];
    }[];
  }[];
}

function plain(value: AnyValue | undefined): string | number | boolean {
  if (!value) return "";
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  return value.boolValue ?? "";
}

function attributes(list: readonly KeyValue[] | undefined): Record<string, string | number | boolean> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, plain(kv.value)]));
}

async function body(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * Listens on 127.0.0.1 (a free port), answers every POST with 200 and keeps the spans of JSON exports. A protobuf
 * export is answered and counted but not decoded: `sink: true` is all a load test needs.
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const received: ReceivedSpan[] = [];
  let requests = 0;
  const server = createServer(async (req, res) => {
    const bytes = await body(req);
    requests++;
    if ((req.headers["content-type"] ?? "").includes("json")) {
      const parsed = JSON.parse(bytes.toString("utf8")) as ExportRequest;
      for (const rs of parsed.resourceSpans ?? []) {
        const service = String(attributes(rs.resource?.attributes)["service.name"] ?? "");
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            received.push({
              service,
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId ?? "",
              name: s.name,
              kind: s.kind ?? 0,
              attributes: attributes(s.attributes),
              statusCode: s.status?.code ?? 0,
              links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
            });
          }
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    } else {
      res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans: () => [...received],
    get requests() {
      return requests;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
