// A small client of the public /v1 API with one key, for the drivers that load and count a running stack
// (`npm run chaos`, `npm run bench`): requests retried until the stack answers, lists walked page by page, and
// a job followed to its end by list queries that return nothing until it gets there.
import { readFileSync } from "node:fs";
import { Agent } from "node:https";
import { join } from "node:path";
import { httpsCall, type HttpsReply } from "./processes.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface RequestOptions {
  /** An `application/x-www-form-urlencoded` body. */
  form?: string;
  /** A JSON body. */
  json?: unknown;
  idempotencyKey?: string;
}

/** A list item or a created object: at least its id. */
export interface Identified {
  id: string;
}

/** A job as `POST /v1/jobs` answers it, reduced to what following it needs. */
export interface JobRef extends Identified {
  type: string;
  created: number;
}

export type JobEnd = "succeeded" | "failed" | "canceled";
const JOB_ENDS: readonly JobEnd[] = ["succeeded", "failed", "canceled"];

export class PublicApi {
  readonly agent: Agent;

  /** `dataDir` holds the gateway's development certificate (`tls/cert.pem`). */
  constructor(
    readonly dataDir: string,
    readonly port: number,
    readonly key: string,
    maxSockets = 16,
  ) {
    this.agent = new Agent({ ca: readFileSync(join(dataDir, "tls", "cert.pem")), keepAlive: true, maxSockets });
  }

  /** One request, answered or thrown (no answer at all). */
  request(method: string, path: string, options: RequestOptions = {}): Promise<HttpsReply> {
    const body = options.json !== undefined ? JSON.stringify(options.json) : options.form;
    return httpsCall(this.dataDir, this.port, method, path, {
      key: this.key,
      agent: this.agent,
      ...(body !== undefined ? { form: body } : {}),
      headers: {
        ...(options.json !== undefined ? { "content-type": "application/json" } : {}),
        ...(options.idempotencyKey !== undefined ? { "idempotency-key": options.idempotencyKey } : {}),
      },
    });
  }

  /**
   * A request retried (same Idempotency-Key) while the stack cannot answer it (no answer, 409 key in use,
   * 429, 5xx), for at most `timeoutMs`; the 2xx body as JSON. Any other answer throws.
   */
  async send<T>(method: string, path: string, options: RequestOptions = {}, timeoutMs = 120_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const reply = await this.request(method, path, options).catch(() => undefined);
      if (reply && reply.status >= 200 && reply.status < 300) return JSON.parse(reply.body) as T;
      const transient = !reply || reply.status === 409 || reply.status === 429 || reply.status >= 500;
      if (!transient || Date.now() > deadline) throw new Error(`${method} ${path}: ${reply ? `${reply.status} ${reply.body.slice(0, 500)}` : "no answer"}`);
      await sleep(300);
    }
  }

  /** The first page of a list (`query` without `limit`). */
  async page<T extends Identified>(path: string, query = "", limit = 100): Promise<{ data: T[]; has_more: boolean }> {
    return this.send("GET", `${path}?limit=${limit}${query ? `&${query}` : ""}`);
  }

  /**
   * Every item of a list, newest first, walked with `starting_after` pages of 100; `walked` is told the count
   * after each page (a long walk shows how far it is).
   */
  async all<T extends Identified>(path: string, query = "", walked?: (count: number) => void): Promise<T[]> {
    const items: T[] = [];
    for (;;) {
      const last = items.at(-1);
      const { data, has_more } = await this.page<T>(path, [query, last ? `starting_after=${last.id}` : ""].filter(Boolean).join("&"));
      items.push(...data);
      walked?.(items.length);
      if (!has_more || data.length === 0) return items;
    }
  }

  /**
   * Whether a job is in `status` now: a list of that status, type and creation second holds it. Such a list
   * is empty, and so cheap, until the job gets there (`GET /v1/jobs/{id}` would carry the job's params,
   * an import's 10,000 items, on every look).
   */
  async jobIs(job: JobRef, status: JobEnd | "queued" | "running"): Promise<boolean> {
    // Walked to the end: a page of jobs is cut at 2 MiB of parameters (an import's items), so with a few large
    // jobs of that status made since this one, the first page may not reach it.
    for (let after = ""; ; ) {
      const { data, has_more } = await this.page<Identified>(
        `/v1/jobs`,
        `status=${status}&type=${job.type}&created[gte]=${job.created}${after ? `&starting_after=${after}` : ""}`,
      );
      if (data.some((j) => j.id === job.id)) return true;
      if (!has_more || data.length === 0) return false;
      after = data.at(-1)!.id;
    }
  }

  /**
   * Follows a job until it ends (looking every `pollMs` whether it succeeded, and every 25th look whether it
   * failed or was canceled) or `timeoutMs` passes (then null). `started` is called once, when the job is
   * first seen out of `queued`.
   */
  async jobEnd(job: JobRef, options: { pollMs: number; timeoutMs: number; started?: () => void }): Promise<JobEnd | null> {
    const deadline = Date.now() + options.timeoutMs;
    let queued = options.started !== undefined;
    for (let look = 0; Date.now() <= deadline; look++) {
      if (queued && !(await this.jobIs(job, "queued"))) {
        queued = false;
        options.started?.();
      }
      for (const end of look % 25 === 0 ? JOB_ENDS : JOB_ENDS.slice(0, 1)) if (await this.jobIs(job, end)) return end;
      await sleep(options.pollMs);
    }
    return null;
  }

  close(): void {
    this.agent.destroy();
  }
}
