import { call } from './api.js';
import { h, setText } from './dom.js';

// The audit log for admins: the latest entries of `GET /audit`, newest first,
// fetched when the view opens and on Refresh (not polled: it is a record to
// consult, and each read costs the controller a file read).

interface AuditEntry {
  ts: string;
  who: string;
  from: string;
  interface: string;
  target: string;
  params: Record<string, unknown>;
  result: string;
}

const SHOWN = 200;

export async function refreshAudit(rows: HTMLElement, status: HTMLElement): Promise<void> {
  setText(status, 'Loading…');
  try {
    const entries = (await call('GET', `/audit?limit=${SHOWN}`)) as AuditEntry[];
    const fragment = document.createDocumentFragment();
    for (const entry of [...entries].reverse()) {
      const params = Object.keys(entry.params).length === 0 ? '' : JSON.stringify(entry.params);
      fragment.append(
        h(
          'tr',
          {},
          h('td', {}, h('time', { datetime: entry.ts, text: new Date(entry.ts).toLocaleString() })),
          h('td', { text: entry.who }),
          h('td', { text: entry.from }),
          h('td', { text: entry.interface }),
          h('td', { text: entry.target }),
          h('td', { text: params }),
          h('td', { text: entry.result }),
        ),
      );
    }
    rows.replaceChildren(fragment);
    setText(status, `${entries.length} ${entries.length === 1 ? 'entry' : 'entries'}, updated ${new Date().toLocaleTimeString()}`);
  } catch (error) {
    setText(status, `Cannot read the audit log: ${(error as Error).message}`);
  }
}
