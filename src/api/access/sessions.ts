import { createHash, randomBytes } from 'node:crypto';
import type { AuthUser } from '../../config/types.js';
import { CoalescingSaver } from '../../state/coalescing-saver.js';
import { readJsonState, writeJsonState } from '../../state/json-state.js';

// Panel logins. A session id is 256 random bits handed to the browser once,
// in its cookie; only its SHA-256 is kept, in memory and in the state file,
// so the file (or a backup of it) lets nobody in. Sessions are state that
// survives a restart: the file is written atomically shortly after a change.
//
// Each session remembers a fingerprint of its user's password hash and
// scope. A session whose user was removed, or whose password or scope
// changed (a reload, or a restart with another file), no longer matches and
// ends when next seen; endChangedUsers() also ends them at once on reload.

export const SESSION_COOKIE = 'iogate_session';
/** Logins kept at once; the least recently used goes first beyond this. */
export const MAX_SESSIONS = 256;
/** Last-use times are written back at most this often per session: the idle timeout may be this much longer after a restart. */
const TOUCH_SAVE_MS = 60_000;
const SAVE_DELAY_MS = 1000;

interface SessionRecord {
  /** Hex SHA-256 of the id in the cookie. */
  idHash: string;
  user: string;
  /** Fingerprint of the user's password hash and scope when the session began. */
  credential: string;
  createdMs: number;
  lastSeenMs: number;
  /** lastSeenMs as last written to the file. */
  savedSeenMs: number;
}

export interface SessionTimes {
  idleMs: number;
  maxMs: number;
}

export interface SessionStoreOptions {
  /** The state file; undefined keeps sessions in memory only. */
  path?: string;
  now?: () => number;
  maxSessions?: number;
  log?: (message: string) => void;
}

export class SessionStore {
  /** Insertion order is use order: a lookup moves its session to the end. */
  private readonly sessions = new Map<string, SessionRecord>();
  private readonly now: () => number;
  private readonly maxSessions: number;
  private readonly saver: CoalescingSaver<unknown> | undefined;

  constructor(options: SessionStoreOptions = {}) {
    this.now = options.now ?? Date.now;
    this.maxSessions = options.maxSessions ?? MAX_SESSIONS;
    const log = options.log ?? ((message: string) => console.error(message));
    const path = options.path;
    if (path === undefined) return;
    this.saver = new CoalescingSaver(`panel sessions to ${path}`, (rows) => writeJsonState(path, rows), SAVE_DELAY_MS, log);
    const { data, warning } = readJsonState(path);
    if (warning !== undefined) log(`panel sessions: ${warning}`);
    for (const row of Array.isArray((data as { sessions?: unknown } | undefined)?.sessions) ? (data as { sessions: unknown[] }).sessions : []) {
      const record = validRecord(row);
      if (record !== undefined && this.sessions.size < this.maxSessions) this.sessions.set(record.idHash, record);
    }
  }

  get size(): number {
    return this.sessions.size;
  }

  /** Starts a session for the user; answers the id for the cookie (never stored). */
  create(user: AuthUser): string {
    const id = randomBytes(32).toString('base64url');
    const now = this.now();
    const record: SessionRecord = { idHash: hashOf(id), user: user.name, credential: credentialOf(user), createdMs: now, lastSeenMs: now, savedSeenMs: now };
    this.sessions.set(record.idHash, record);
    while (this.sessions.size > this.maxSessions) this.sessions.delete(this.sessions.keys().next().value!);
    this.changed();
    return id;
  }

  /**
   * The user a cookie's session belongs to, or undefined when it is unknown,
   * expired, or its user is gone or changed (then the session ends).
   * `touch` counts this as use, which keeps an idle session alive.
   */
  lookup(id: string, users: readonly AuthUser[], times: SessionTimes, touch = true): AuthUser | undefined {
    if (id.length !== 43) return undefined;
    const key = hashOf(id);
    const record = this.sessions.get(key);
    if (record === undefined) return undefined;
    const now = this.now();
    const user = users.find((candidate) => candidate.name === record.user);
    if (user === undefined || credentialOf(user) !== record.credential || now - record.lastSeenMs > times.idleMs || now - record.createdMs > times.maxMs) {
      this.sessions.delete(key);
      this.changed();
      return undefined;
    }
    if (touch) {
      record.lastSeenMs = Math.max(record.lastSeenMs, now);
      this.sessions.delete(key);
      this.sessions.set(key, record);
      if (record.lastSeenMs - record.savedSeenMs >= TOUCH_SAVE_MS) this.changed();
    }
    return user;
  }

  /** Ends the session of this cookie; true when there was one. */
  end(id: string): boolean {
    const deleted = this.sessions.delete(hashOf(id));
    if (deleted) this.changed();
    return deleted;
  }

  /** Ends the sessions of users removed or whose password or scope changed; answers their names. */
  endChangedUsers(users: readonly AuthUser[]): string[] {
    const ended = new Set<string>();
    for (const [key, record] of this.sessions) {
      const user = users.find((candidate) => candidate.name === record.user);
      if (user !== undefined && credentialOf(user) === record.credential) continue;
      this.sessions.delete(key);
      ended.add(record.user);
    }
    if (ended.size > 0) this.changed();
    return [...ended];
  }

  /** Writes pending changes (at shutdown). */
  flush(): Promise<void> {
    return this.saver?.flush() ?? Promise.resolve();
  }

  private changed(): void {
    this.saver?.markDirty(() => {
      const rows = [...this.sessions.values()].map((record) => {
        record.savedSeenMs = record.lastSeenMs;
        const { savedSeenMs: _saved, ...row } = record;
        return row;
      });
      return { sessions: rows };
    });
  }
}

function hashOf(id: string): string {
  return createHash('sha256').update(id, 'utf8').digest('hex');
}

/** Changes whenever the user's password hash or scope does; reveals neither. */
function credentialOf(user: AuthUser): string {
  return createHash('sha256').update(`${user.scope}\n${user.passwordHash}`, 'utf8').digest('hex').slice(0, 32);
}

function validRecord(row: unknown): SessionRecord | undefined {
  if (typeof row !== 'object' || row === null) return undefined;
  const { idHash, user, credential, createdMs, lastSeenMs } = row as Record<string, unknown>;
  if (typeof idHash !== 'string' || !/^[0-9a-f]{64}$/.test(idHash) || typeof user !== 'string' || typeof credential !== 'string') return undefined;
  if (typeof createdMs !== 'number' || typeof lastSeenMs !== 'number' || !Number.isFinite(createdMs) || !Number.isFinite(lastSeenMs)) return undefined;
  return { idHash, user, credential, createdMs, lastSeenMs, savedSeenMs: lastSeenMs };
}

/** The session id in a Cookie header, or undefined. */
export function sessionCookieOf(cookieHeader: string | undefined): string | undefined {
  if (cookieHeader === undefined) return undefined;
  for (const part of cookieHeader.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}
