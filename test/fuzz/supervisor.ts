import { Agent, request } from 'node:http';
import { Agent as TlsAgent, request as tlsRequest } from 'node:https';
import { READ_TOKEN, sleep } from './common.js';

// The supervising client: what a SCADA poller does during the attack, from
// its own address (127.0.0.1; the attackers use others). One keep-alive
// connection, one GET every 50 ms, each given 3 s; answered means a 200.
// With `tls`, the same over HTTPS, trusting only the daemon's certificate.

const PACE_MS = 50;
const DEADLINE_MS = 3000;

export interface SupervisorResult {
  sent: number;
  answered: number;
  /** Why the others were not, with counts. */
  failures: Record<string, number>;
  /** Latencies of answered requests, ms. */
  latencies: number[];
}

export class Supervisor {
  readonly result: SupervisorResult = { sent: 0, answered: 0, failures: {}, latencies: [] };
  private running = true;
  private readonly done: Promise<void>;
  private readonly agent: Agent;
  private readonly request: typeof request;
  private readonly tlsOptions: { ca?: Buffer; servername?: string };

  /** `tls.ca`: the certificate (PEM) the daemon's HTTPS listener must present for `tls.servername`. */
  constructor(
    private readonly port: number,
    tls?: { ca: Buffer; servername: string },
  ) {
    this.agent = tls ? new TlsAgent({ keepAlive: true, maxSockets: 1, ca: tls.ca, servername: tls.servername }) : new Agent({ keepAlive: true, maxSockets: 1 });
    this.request = tls ? (tlsRequest as unknown as typeof request) : request;
    this.tlsOptions = tls ?? {};
    this.done = this.loop();
  }

  /** Counts from here on only (after the quiet start, say). */
  reset(): void {
    this.result.sent = 0;
    this.result.answered = 0;
    this.result.failures = {};
    this.result.latencies = [];
  }

  async stop(): Promise<SupervisorResult> {
    this.running = false;
    await this.done;
    this.agent.destroy();
    return this.result;
  }

  private async loop(): Promise<void> {
    while (this.running) {
      const outcome = await this.once();
      this.result.sent++;
      if (typeof outcome === 'number') {
        this.result.answered++;
        // Bounded: a sample is enough for a percentile.
        if (this.result.latencies.length < 100_000) this.result.latencies.push(outcome);
      } else this.result.failures[outcome] = (this.result.failures[outcome] ?? 0) + 1;
      await sleep(PACE_MS);
    }
  }

  /** The latency in ms, or why it was not answered. */
  private once(): Promise<number | string> {
    const started = performance.now();
    return new Promise((resolve) => {
      const req = this.request(
        { ...this.tlsOptions, host: '127.0.0.1', port: this.port, path: '/rest/do/1_01', agent: this.agent, localAddress: '127.0.0.1', headers: { Authorization: `Bearer ${READ_TOKEN}` } },
        (res) => {
          res.resume();
          res.on('error', () => resolve('response error'));
          res.on('end', () => resolve(res.statusCode === 200 ? performance.now() - started : `status ${res.statusCode}`));
        },
      );
      req.setTimeout(DEADLINE_MS, () => {
        req.destroy();
        resolve('no answer within 3 s');
      });
      req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
      req.end();
    });
  }
}
