import type { Device } from './api.js';
import { h, setAttr, setText } from './dom.js';
import { deviceLabel } from './labels.js';

// An automation's card: whether it acts, its last and next run, and two
// buttons: switch it on or off (`enabled`), and run it now (`trigger=1`).

type Refresher = (device: Device, force: boolean) => void;

function when(iso: unknown): string {
  if (typeof iso !== 'string') return 'never';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? 'never' : date.toLocaleString();
}

/** Beside the name: "on · last 12:03:04 ok · next 29/11 07:30". */
export function automationSummary(device: Device): string {
  const parts = [device.enabled ? 'on' : 'off'];
  if (device.offloaded === true) parts.push('in the board firmware');
  const result = typeof device.last_result === 'string' ? device.last_result.split(':')[0] : '';
  parts.push(`last ${when(device.last_triggered)}${result ? ` (${result})` : ''}`);
  if (typeof device.next_run === 'string') parts.push(`next ${when(device.next_run)}`);
  return parts.join(' · ');
}

export function buildAutomationControls(device: Device, run: (fields: Record<string, unknown>) => void, refreshers: Refresher[]): HTMLElement {
  const toggle = h('button', { type: 'button', class: 'automation-enable' });
  toggle.addEventListener('click', () => run({ enabled: device.enabled ? 0 : 1 }));
  const now = h('button', { type: 'button', class: 'automation-run', text: 'Run now' });
  now.addEventListener('click', () => run({ trigger: 1 }));
  const about = h('p', { class: 'sub' });
  const root = h('div', { class: 'automation' }, about, h('div', { role: 'group', 'aria-label': `Control ${deviceLabel(device)}` }, toggle, now));
  refreshers.push((state) => {
    device = state;
    const name = deviceLabel(state);
    setText(toggle, state.enabled ? 'Disable' : 'Enable');
    setAttr(toggle, 'aria-label', `${state.enabled ? 'Disable' : 'Enable'} ${name}`);
    setAttr(now, 'aria-label', `Run now: ${name}`);
    setText(about, `${typeof state.description === 'string' ? state.description : ''}${typeof state.last_result === 'string' ? ` — ${state.last_result}` : ''}`);
  });
  return root;
}
