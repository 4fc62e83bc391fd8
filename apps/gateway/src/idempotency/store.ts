/** What a replay sends again (the answer core recorded): see replay.ts. */

/** One header of a recorded answer, named as it was first sent. */
export interface RecordedHeader {
  readonly name: string;
  readonly value: string | readonly string[];
}

/** A response as first sent: status, headers and body bytes. */
export interface RecordedResponse {
  readonly status: number;
  readonly body: Buffer;
  /** Request id of the request that produced it. */
  readonly requestId: string;
  /** Its headers but the per-request ones (replay.ts `answerHeaders`), replayed as they were. */
  readonly headers?: readonly RecordedHeader[];
}
