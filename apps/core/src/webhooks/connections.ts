import { Agent as HttpAgent } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import type { Socket } from "node:net";
import { lookupPinnedTo, type ResolvedAddress } from "./pinned-lookup.js";

/**
 * Keep-alive connections to webhook endpoints (docs/webhooks.md, "Connections"). A new TCP (and TLS) connection per
 * delivery cost the worker and the receiver more than the POST itself; a busy endpoint now gets its deliveries over
 * the connections its last ones used.
 *
 * The SSRF rule stays whole: a connection is opened only to an address the delivery's own lookup checked, and reused
 * only for the same pinned address. Each agent belongs to one (scheme, host, port, address) and its sockets connect
 * through a lookup that answers that address and nothing else, so a socket taken from it is connected to the
 * address checked, never to a name resolved a second time.
 */

/** How long a connection waits unused before it closes (ms): below the 5 s keep-alive most servers give an idle connection. */
export const IDLE_SOCKET_MS = 2_000;
/** How long an endpoint's connections stay open once no flight of this worker uses them (ms): the lane has gone idle. */
export const ENDPOINT_IDLE_MS = 2_000;
/** Connections kept open per agent while unused: as many as one endpoint may have deliveries in flight. */
export const FREE_SOCKETS_PER_AGENT = 4;

/** Where one attempt connects: the url's scheme, host and port, and the address its lookup pinned. */
export interface ConnectionTarget {
  readonly tls: boolean;
  readonly host: string;
  readonly port: number | undefined;
  readonly address: ResolvedAddress;
}

type PinnedAgent = HttpAgent | HttpsAgent;

/** An agent whose every socket connects to `target.address` (its lookup answers nothing else), kept alive between requests. */
function pinnedAgent(target: ConnectionTarget, idleSocketMs: number): PinnedAgent {
  const options = { keepAlive: true, maxFreeSockets: FREE_SOCKETS_PER_AGENT, timeout: idleSocketMs, scheduling: "lifo" as const };
  const agent = target.tls ? new HttpsAgent(options) : new HttpAgent(options);
  const lookup = lookupPinnedTo(target.host, target.address);
  // The pin is the agent's, not each request's: whatever a request passes, a socket of this agent connects here.
  const connect = agent.createConnection.bind(agent) as (options: object, callback?: (error: Error | null, socket: Socket) => void) => Socket;
  agent.createConnection = ((connectOptions: object, callback?: (error: Error | null, socket: Socket) => void) =>
    connect({ ...connectOptions, lookup }, callback)) as typeof agent.createConnection;
  return agent;
}

/** The keep-alive connections of one endpoint: one agent per pinned address (and scheme, host, port). */
export class EndpointConnections {
  private readonly agents = new Map<string, PinnedAgent>();
  private closed = false;

  constructor(private readonly idleSocketMs: number = IDLE_SOCKET_MS) {}

  /** The agent for `target`, made on first use; none once closed (the attempt then opens a connection of its own). */
  agentFor(target: ConnectionTarget): PinnedAgent | false {
    if (this.closed) return false;
    const key = `${target.tls ? "https" : "http"}|${target.host}|${target.port ?? ""}|${target.address.family}|${target.address.address}`;
    let agent = this.agents.get(key);
    if (!agent) {
      agent = pinnedAgent(target, this.idleSocketMs);
      this.agents.set(key, agent);
    }
    return agent;
  }

  /** Agents open now (tests). */
  get size(): number {
    return this.agents.size;
  }

  /** Closes every connection (those in use end with their request). */
  close(): void {
    this.closed = true;
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }
}

interface Held {
  readonly connections: EndpointConnections;
  users: number;
  timer: NodeJS.Timeout | null;
}

/**
 * The connections of one worker process, per endpoint: a flight takes its endpoint's while it runs and gives them
 * back at its end; once none of the worker's flights has used an endpoint's connections for ENDPOINT_IDLE_MS, they
 * are closed, so an endpoint that gets nothing more holds no socket.
 */
export class ConnectionPool {
  private readonly endpoints = new Map<string, Held>();

  constructor(
    private readonly idleMs: number = ENDPOINT_IDLE_MS,
    private readonly idleSocketMs: number = IDLE_SOCKET_MS,
  ) {}

  /** The endpoint's connections, for one flight; give them back with `release` at the flight's end. */
  acquire(endpoint: string): EndpointConnections {
    let held = this.endpoints.get(endpoint);
    if (!held) {
      held = { connections: new EndpointConnections(this.idleSocketMs), users: 0, timer: null };
      this.endpoints.set(endpoint, held);
    }
    if (held.timer) clearTimeout(held.timer);
    held.timer = null;
    held.users++;
    return held.connections;
  }

  /** A flight of `endpoint` ended; the last one out starts the idle wait. */
  release(endpoint: string): void {
    const held = this.endpoints.get(endpoint);
    if (!held || --held.users > 0) return;
    held.timer = setTimeout(() => {
      if (held.users > 0) return;
      this.endpoints.delete(endpoint);
      held.connections.close();
    }, this.idleMs);
    held.timer.unref();
  }

  /** Endpoints with connections held now (tests). */
  get size(): number {
    return this.endpoints.size;
  }

  /** Closes every endpoint's connections (the worker's stop). */
  close(): void {
    for (const held of this.endpoints.values()) {
      if (held.timer) clearTimeout(held.timer);
      held.connections.close();
    }
    this.endpoints.clear();
  }
}
