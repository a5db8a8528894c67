import type { Device } from './api.js';
import { setText } from './dom.js';

// How far a card's value can be trusted. The panel reads the meta view
// (`?meta=1`), so each state carries `quality` and `age_s`; a card whose value
// is stale or whose board is offline is greyed (class `q-stale`, `q-offline`,
// `q-unknown`) and says so with the value's age, counted on in the browser
// until the next state arrives. States without quality (a write's confirmed
// reply) are fresh.

const QUALITIES = ['good', 'stale', 'offline', 'unknown'] as const;
type Quality = (typeof QUALITIES)[number];

const LABEL: Record<Quality, string> = { good: '', stale: 'stale', offline: 'board offline', unknown: 'not read yet' };

interface Aged {
  root: HTMLElement;
  note: HTMLElement;
  quality: Quality;
  /** The value's age when the state arrived, s (null: unknown), and when that was (performance.now()). */
  ageS: number | null;
  receivedAt: number;
}

/** Cards whose note shows an age: updated once a second, and only those. */
const ticking = new Set<Aged>();
let timer: number | undefined;

export class QualityMark {
  private readonly aged: Aged;

  constructor(root: HTMLElement, note: HTMLElement) {
    this.aged = { root, note, quality: 'good', ageS: null, receivedAt: 0 };
  }

  show(device: Device): void {
    const quality: Quality = QUALITIES.includes(device['quality'] as Quality) ? (device['quality'] as Quality) : 'good';
    const { aged } = this;
    for (const other of QUALITIES) aged.root.classList.toggle(`q-${other}`, other === quality && quality !== 'good');
    aged.quality = quality;
    aged.ageS = typeof device['age_s'] === 'number' ? device['age_s'] : null;
    aged.receivedAt = performance.now();
    aged.note.hidden = quality === 'good';
    if (quality === 'good') {
      ticking.delete(aged);
      setText(aged.note, '');
      return;
    }
    render(aged, aged.receivedAt);
    ticking.add(aged);
    timer ??= window.setInterval(tick, 1000);
  }
}

function tick(): void {
  const now = performance.now();
  for (const aged of ticking) {
    if (!aged.root.isConnected) ticking.delete(aged);
    else render(aged, now);
  }
  if (ticking.size === 0) {
    window.clearInterval(timer);
    timer = undefined;
  }
}

function render(aged: Aged, now: number): void {
  const label = LABEL[aged.quality];
  // `age_s` is the age of the last good value (docs/quality.md), not how long the board has been away: say so.
  setText(aged.note, aged.ageS === null ? label : `${label} · last read ${formatAge(aged.ageS + (now - aged.receivedAt) / 1000)} ago`);
}

/** 4 s, 3 min, 2 h 5 min, 3 d: precise enough to tell a blip from an outage. */
export function formatAge(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86_400)} d`;
}
