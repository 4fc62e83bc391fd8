import type { Binary, ClientSession, Collection, Db, Filter } from "mongodb";
import type { Logger } from "pino";
import { FencedOut } from "../../storage/byte-store.js";
import { JOBS_COLLECTION } from "../model.js";
import type { RunnerJob } from "./seam.js";

/**
 * The transactions of one job run: a bulk job's chunk writes its changes and their events in one (docs/events.md,
 * "Events in the same batch"). One session serves the whole run, its id recorded on the job (`txn_session`, guarded
 * by the run's epoch) before its first transaction. A worker killed inside a transaction leaves it open on the server
 * until the server reaps it (`transactionLifetimeLimitSeconds`, 60 s by default), holding the chunk's documents: the
 * run that takes the job over would meet write conflicts on them for that long. So before its own first transaction
 * that run ends the session its predecessor recorded (`killSessions`, which a user may do to its own sessions), and the
 * open transaction with it.
 */
export class RunTransactions {
  private session: ClientSession | null = null;
  private recorded = false;
  private readonly jobs: Collection<RunnerJob>;

  constructor(
    private readonly db: Db,
    private readonly job: Pick<RunnerJob, "_id" | "epoch" | "txn_session">,
    private readonly owner: string,
    private readonly logger: Logger,
  ) {
    this.jobs = db.collection<RunnerJob>(JOBS_COLLECTION);
  }

  /** Runs `work` in one transaction, committed majority and journaled; retried whole when the server says it may be (the driver's withTransaction). */
  async run<T>(work: (session: ClientSession) => Promise<T>): Promise<T> {
    const session = await this.ready();
    return session.withTransaction(work);
  }

  /** Ends the run's session (its end, whatever it was). */
  async end(): Promise<void> {
    await this.session?.endSession().catch(() => undefined);
    this.session = null;
  }

  private async ready(): Promise<ClientSession> {
    this.session ??= this.db.client.startSession();
    if (this.recorded) return this.session;
    const id = this.session.serverSession.id.id;
    const previous = this.job.txn_session;
    if (previous && !Buffer.from(previous.buffer).equals(Buffer.from(id.buffer))) await endSession(this.db, previous, this.logger, this.job._id);
    const written = await this.jobs.updateOne({ _id: this.job._id, epoch: this.job.epoch, lease_owner: this.owner } as Filter<RunnerJob>, {
      $set: { txn_session: id },
    });
    if (written.matchedCount === 0) throw new FencedOut(`job ${this.job._id}: its lease was taken over`);
    this.recorded = true;
    return this.session;
  }
}

/** Ends a session of this database's user, and any transaction it holds open; a failure leaves it to the server's reaping. */
async function endSession(db: Db, id: Binary, logger: Logger, job: string): Promise<void> {
  try {
    await db.admin().command({ killSessions: [{ id }] });
  } catch (error) {
    logger.warn({ err: error, job }, "jobs: the previous run's session could not be ended; a transaction it left open ends when the server reaps it");
  }
}
