import type { MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";
import type { Metadata } from "@grpc/grpc-js";

export type AnyService = GenService<GenServiceMethods>;

type Methods<S> = S extends GenService<infer M> ? M : never;

/** Whether a call was cancelled by its caller or its deadline, read when it matters (before a write). */
export interface CallSignal {
  readonly aborted: boolean;
}

/** Who a call comes from, as the server's `authorize` hook found it (core's caller table gives more than a name). */
export interface Caller {
  readonly name: string;
}

/** What a handler learns about its call besides the request message. */
export interface CallContext {
  readonly method: string;
  readonly metadata: Metadata;
  /** Aborted when the caller cancels or the deadline passes (an AbortSignal satisfies it). */
  readonly signal: CallSignal;
  /** The caller's deadline (ms since the epoch); Infinity when it set none. */
  readonly deadline: number;
  /** Who the server's `authorize` hook found the caller to be; null without such a hook. */
  readonly caller: Caller | null;
  /** Adds a string to the call's trailing metadata, sent with its answer or its error (e.g. `rms-replay`). */
  readonly setTrailer?: (key: string, value: string) => void;
  /**
   * A client-streaming method's: sends the (empty) response headers now, before the answer: the caller's go-ahead
   * for the messages it holds back (`CallOptions.onHeaders`). Once; later calls do nothing.
   */
  readonly sendHeaders?: () => void;
}

/**
 * A server implementation of every method of a service: a unary method answers one request; a client-streaming one
 * reads its requests as an async iterable (backpressure: the next message is read when the loop asks for it) and
 * answers once; a server-streaming one answers with an async iterable of messages (sent as the caller reads them).
 */
export type ServiceImplementation<S> = {
  [K in keyof Methods<S>]: Methods<S>[K]["methodKind"] extends "client_streaming"
    ? (requests: AsyncIterable<MessageShape<Methods<S>[K]["input"]>>, context: CallContext) => Promise<MessageInitShape<Methods<S>[K]["output"]>>
    : Methods<S>[K]["methodKind"] extends "server_streaming"
      ? (request: MessageShape<Methods<S>[K]["input"]>, context: CallContext) => AsyncIterable<MessageInitShape<Methods<S>[K]["output"]>>
      : (request: MessageShape<Methods<S>[K]["input"]>, context: CallContext) => Promise<MessageInitShape<Methods<S>[K]["output"]>>;
};

export interface CallOptions {
  /** Extra metadata sent with the call (e.g. rms-request-id, idempotency-key). */
  readonly metadata?: Readonly<Record<string, string>>;
  /** Per-call deadline in milliseconds from now. */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
  /** Told the call's trailing metadata once its status arrives, before its promise settles (success or error). */
  readonly onTrailers?: (trailers: Metadata) => void;
  /** A client-streaming call's: told when the server sends its response headers ahead of its answer (`CallContext.sendHeaders`). */
  readonly onHeaders?: () => void;
}

/**
 * A typed promise-based client: one function per method. A unary method takes a request and answers one message; a
 * client-streaming one takes an async iterable of requests (sent with backpressure; when it throws, the call is
 * cancelled) and answers one message; a server-streaming one answers an async iterable of messages (read with
 * backpressure; leaving the loop early cancels the call). Bidirectional methods are left out.
 */
export type ServiceClient<S> = {
  [K in keyof Methods<S> as Methods<S>[K]["methodKind"] extends "bidi_streaming" ? never : K]: Methods<S>[K]["methodKind"] extends "client_streaming"
    ? (requests: AsyncIterable<MessageInitShape<Methods<S>[K]["input"]>>, options?: CallOptions) => Promise<MessageShape<Methods<S>[K]["output"]>>
    : Methods<S>[K]["methodKind"] extends "server_streaming"
      ? (request: MessageInitShape<Methods<S>[K]["input"]>, options?: CallOptions) => AsyncIterable<MessageShape<Methods<S>[K]["output"]>>
      : (request: MessageInitShape<Methods<S>[K]["input"]>, options?: CallOptions) => Promise<MessageShape<Methods<S>[K]["output"]>>;
};
