// Slows password guessing. Each failed login from an address, and each one
// for a user name, pushes back the time the next attempt from that address
// (or for that user) is even looked at: a few mistakes are free, then the
// wait doubles with every failure up to a cap. Attempts that come too early
// are refused at once, before scrypt runs, so a flood costs neither CPU nor
// the event loop. A success clears the address and the user. The per-user
// wait is capped lower than the per-address one: it is what an attacker from
// many addresses meets, but also what locks the real user out meanwhile.

const FREE_FAILURES = 3;
const FIRST_DELAY_MS = 1000;
const ADDRESS_CAP_MS = 60_000;
const USER_CAP_MS = 10_000;
/** A record without a failure for this long is forgotten. */
const FORGET_MS = 15 * 60_000;
/** Records kept per kind; the oldest goes first beyond this (bounded memory under a spray of addresses or names). */
const MAX_RECORDS = 4096;

interface FailureRecord {
  failures: number;
  lastFailureMs: number;
  /** Attempts before this time are refused unseen. */
  notBeforeMs: number;
}

export class LoginThrottle {
  private readonly addresses = new Map<string, FailureRecord>();
  private readonly users = new Map<string, FailureRecord>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Milliseconds until this address may try for this user again; 0 = now. */
  waitMs(address: string, user: string): number {
    const now = this.now();
    return Math.max(0, this.remaining(this.addresses, address, now), this.remaining(this.users, user, now));
  }

  failed(address: string, user: string): void {
    const now = this.now();
    this.bump(this.addresses, address, now, ADDRESS_CAP_MS);
    this.bump(this.users, user, now, USER_CAP_MS);
  }

  succeeded(address: string, user: string): void {
    this.addresses.delete(address);
    this.users.delete(user);
  }

  /** Records held, for tests of the memory bound. */
  get size(): number {
    return this.addresses.size + this.users.size;
  }

  private remaining(records: Map<string, FailureRecord>, key: string, now: number): number {
    const record = records.get(key);
    if (record === undefined) return 0;
    if (now - record.lastFailureMs > FORGET_MS) {
      records.delete(key);
      return 0;
    }
    return record.notBeforeMs - now;
  }

  private bump(records: Map<string, FailureRecord>, key: string, now: number, capMs: number): void {
    let record = records.get(key);
    if (record !== undefined && now - record.lastFailureMs > FORGET_MS) record = undefined;
    record ??= { failures: 0, lastFailureMs: now, notBeforeMs: now };
    record.failures++;
    record.lastFailureMs = now;
    const over = record.failures - FREE_FAILURES;
    record.notBeforeMs = over > 0 ? now + Math.min(capMs, FIRST_DELAY_MS * 2 ** Math.min(over - 1, 20)) : now;
    // Re-inserted so the map's order is the order of last failure, oldest first.
    records.delete(key);
    records.set(key, record);
    while (records.size > MAX_RECORDS) records.delete(records.keys().next().value!);
  }
}
