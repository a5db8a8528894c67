import type { Device } from './api.js';
import { h, setAttr, setText } from './dom.js';
import { deviceLabel } from './labels.js';

// The controls of a cover card: open, stop and close, and a position slider
// that follows the cover while it moves (pushed states) unless the user holds
// it; letting go asks for that position. A tilt slider joins once the cover
// reports a tilt.

type Refresher = (device: Device, force: boolean) => void;

/** Short, beside the name: "opening", "stopped", "not calibrated", "board offline" (the sliders show the figures). */
export function coverSummary(device: Device): string {
  if (device.moving === 'unknown') return 'board offline';
  if (device.moving === 'up') return 'opening';
  if (device.moving === 'down') return 'closing';
  return device.calibrated === false ? 'not calibrated' : 'stopped';
}

export function buildCoverControls(device: Device, run: (fields: Record<string, unknown>) => void, refreshers: Refresher[]): HTMLElement {
  const label = () => deviceLabel(device);
  const buttons = (['open', 'stop', 'close'] as const).map((command) => {
    const button = h('button', { type: 'button', class: `cover-${command}`, text: command[0]!.toUpperCase() + command.slice(1), 'aria-label': `${command} ${label()}` });
    button.addEventListener('click', () => run({ command }));
    return button;
  });
  const commands = h('div', { class: 'cover-buttons', role: 'group', 'aria-label': `Move ${label()}` }, ...buttons);
  const position = slider('Position', (value) => run({ position: value }));
  const root = h('div', { class: 'cover' }, commands, position.row);
  let tilt: ReturnType<typeof slider> | undefined;
  refreshers.push((state, force) => {
    device = state;
    const name = label();
    buttons.forEach((button) => setAttr(button, 'aria-label', `${button.textContent!.toLowerCase()} ${name}`));
    setAttr(commands, 'aria-label', `Move ${name}`);
    position.show(state.position, name, force);
    setAttr(root, 'data-moving', String(state.moving ?? 'stopped'));
    if (typeof state.tilt === 'number' && !tilt) {
      tilt = slider('Tilt', (value) => run({ tilt: value }));
      root.append(tilt.row);
    }
    tilt?.show(state.tilt, name, force);
  });
  return root;
}

/** A 0..100 % slider with its reading; it follows pushed values while the user is not holding it. */
function slider(what: string, ask: (value: number) => void) {
  const input = h('input', { type: 'range', min: 0, max: 100, step: 1 });
  const reading = h('span', { class: 'reading' });
  let held = false;
  input.addEventListener('pointerdown', () => (held = true));
  input.addEventListener('input', () => setText(reading, `${input.value} %`));
  input.addEventListener('change', () => {
    held = false;
    ask(Number(input.value));
  });
  const row = h('div', { class: 'range' }, h('span', { class: 'what', text: what }), input, reading);
  return {
    row,
    show(value: unknown, name: string, force: boolean) {
      setAttr(input, 'aria-label', `${what} ${name}`);
      const known = typeof value === 'number';
      setAttr(input, 'aria-valuetext', known ? `${value} %` : 'unknown');
      setAttr(row, 'data-known', String(known));
      if (!known) {
        setText(reading, '?');
        return;
      }
      if ((force || !held) && input.value !== String(value)) input.value = String(value);
      if (force || !held) setText(reading, `${value} %`);
    },
  };
}
