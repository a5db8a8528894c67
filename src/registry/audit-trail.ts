import { RequestError } from './request-error.js';

// Who changed what. The write path (write.ts) records every write here with
// the actor its API named, whichever API it came through, so attribution
// lives in one place; reloads, logins and refused credentials are recorded
// by the code that decides them. Recording only hands the entry to the sink
// (src/state/audit-log.ts buffers it and writes it out each second), so it
// never waits for the disk.

/** Who asked, from where, through which door. */
export interface Actor {
  /** A token's name, a panel user, `anonymous`, `mqtt`, `sparkplug:<host id>`, `automation:<id>`, `config`… */
  readonly who: string;
  /** The client's address; '' where there is none (a broker's command, a timer). */
  readonly from: string;
  /** `rest`, `json`, `bulk`, `rpc`, `websocket`, `mqtt`, `sparkplug`, `http`, `signal`… */
  readonly interface: string;
}

export interface AuditEntry {
  /** ISO 8601 time, UTC, milliseconds. */
  ts: string;
  who: string;
  from: string;
  interface: string;
  /** What was acted on: `do/1_03`, `config`, `auth/login`, or a request path. */
  target: string;
  /** The values asked for (a write's fields); never a password or token. */
  params: Readonly<Record<string, unknown>>;
  /** `ok`, or what went wrong (`refused: …`, `failed: …`). */
  result: string;
}

export type AuditSink = (entry: AuditEntry) => void;

/** A write whose API named nobody (a caller outside the APIs, a test). */
export const UNKNOWN_ACTOR: Actor = { who: 'unknown', from: '', interface: 'internal' };

let sink: AuditSink | undefined;

/** The daemon's audit log takes the entries from here on; undefined = none kept. */
export function setAuditSink(next: AuditSink | undefined): void {
  sink = next;
}

/** True while something keeps entries: lets callers skip building one for nobody. */
export function auditing(): boolean {
  return sink !== undefined;
}

export function audit(actor: Actor, target: string, params: Readonly<Record<string, unknown>>, result: string): void {
  if (sink === undefined) return;
  sink({ ts: new Date().toISOString(), who: actor.who, from: actor.from, interface: actor.interface, target, params, result });
}

/** An error as the audit log shows it: the status tells refusals (4xx) from failures. */
export function auditResult(error: unknown): string {
  if (error instanceof RequestError) return `${error.status < 500 ? 'refused' : 'failed'}: ${error.status} ${error.message}`;
  return `failed: ${error instanceof Error ? error.message : String(error)}`;
}

/** Refused credentials recorded per second at most; a flood of them must not push real changes out of the bounded log. */
const REFUSALS_PER_SECOND = 10;
let refusalSecond = 0;
let refusalsThisSecond = 0;
let refusalsSuppressed = 0;

/**
 * A request refused for its credentials (401, 403). Beyond ten a second the
 * rest are only counted, and the next one recorded says how many were not.
 */
export function auditRefusal(actor: Actor, target: string, result: string, nowMs = Date.now()): void {
  if (sink === undefined) return;
  const second = Math.floor(nowMs / 1000);
  if (second !== refusalSecond) {
    refusalSecond = second;
    refusalsThisSecond = 0;
  }
  if (++refusalsThisSecond > REFUSALS_PER_SECOND) {
    refusalsSuppressed++;
    return;
  }
  const params = refusalsSuppressed > 0 ? { not_recorded_before: refusalsSuppressed } : {};
  refusalsSuppressed = 0;
  audit(actor, target, params, result);
}
