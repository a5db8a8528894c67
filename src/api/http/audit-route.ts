import { RequestError } from '../../registry/request-error.js';
import type { AuditEntry } from '../../registry/audit-trail.js';
import { MAX_AUDIT_LIMIT } from '../../state/audit-log.js';

// The query of `GET /audit`: `since` (epoch milliseconds or an ISO 8601 time)
// and `limit` (1…1000, 100 by default). Anything else is a 400, never a
// silent default that answers something the client did not ask for.

export interface AuditReader {
  read(sinceMs: number | undefined, limit: number): Promise<AuditEntry[]>;
}

const DEFAULT_LIMIT = 100;

export function auditQuery(url: string): { sinceMs: number | undefined; limit: number } {
  const at = url.indexOf('?');
  const query = new URLSearchParams(at < 0 ? '' : url.slice(at + 1));
  let sinceMs: number | undefined;
  const since = query.get('since');
  if (since !== null) {
    sinceMs = /^\d+$/.test(since) ? Number(since) : Date.parse(since);
    if (!Number.isFinite(sinceMs)) throw new RequestError(400, 'ValueError', `since must be epoch milliseconds or an ISO 8601 time, got ${JSON.stringify(since.slice(0, 64))}`);
  }
  let limit = DEFAULT_LIMIT;
  const given = query.get('limit');
  if (given !== null) {
    limit = /^\d{1,7}$/.test(given) ? Number(given) : NaN;
    if (!(limit >= 1 && limit <= MAX_AUDIT_LIMIT)) throw new RequestError(400, 'ValueError', `limit must be a whole number from 1 to ${MAX_AUDIT_LIMIT}`);
  }
  return { sinceMs, limit };
}
