import type { Device } from './api.js';
import { formatNumber, h, setAttr, setText } from './dom.js';
import { buildCoverControls, coverSummary } from './cover-controls.js';
import { automationSummary, buildAutomationControls } from './automation-controls.js';
import { alias, deviceLabel, sensorTitle } from './labels.js';
import { addPoint, drawChart, seriesKey, svgElement } from './trends.js';
import { QualityMark } from './quality.js';

// One card per device. It is built once; later states patch only the parts
// whose text changed. Writes go through `Actions`, which reports the board's
// confirmed state (or an error) back into the card.

export interface Actions {
  /**
   * Writes fields; resolves with the confirmed state when the card should show it (not when the
   * live feed will bring it), rejects with a message the card shows.
   */
  write(view: DeviceView, fields: Record<string, unknown>): Promise<Device | undefined>;
  /** Opens the big chart of one trended value. */
  openTrend(key: string, title: string, unit: string): void;
}

/** A card's state, as a class on it (`card-live`, `card-offline` …), for styles to follow. */
export type CardState = 'live' | 'offline';

/** Values with a trend chart, per `dev`: the field, its label on the card (empty: the card's main value) and its unit. */
const TRENDED: Record<string, Array<{ field: string; label: string; unit?: string }>> = {
  ai: [{ field: 'value', label: '' }],
  ao: [{ field: 'value', label: '' }],
  temp: [{ field: 'value', label: '', unit: '°C' }],
};
/** A DS2438's readings, each on a row of its own. */
const MULTI_SENSOR = [
  { field: 'temp', label: 'Temperature', unit: '°C' },
  { field: 'humidity', label: 'Humidity', unit: '%RH' },
  { field: 'vdd', label: 'Supply (VDD)', unit: 'V' },
  { field: 'vad', label: 'Sensed (VAD)', unit: 'V' },
];

const SPARK_WIDTH = 100;

interface Trend {
  key: string;
  field: string;
  unit: string;
  svg: SVGSVGElement;
  button: HTMLButtonElement;
  /** The row's value text, for readings on rows of their own. */
  text?: HTMLElement;
}

const SWITCHES = new Set(['do', 'ro', 'led', 'output', 'relay', 'digitaloutput']);
/** Types that take no alias (EVOK): everything else can be renamed. */
const NOT_ALIASABLE = new Set(['modbus_slave', 'device_info', 'run', 'automation']);
/** Fields shown by the generic renderer: identity and bulky ones are left out. */
const HIDDEN_FIELDS = new Set(['dev', 'circuit', 'alias', 'glob_dev_id', 'modes', 'counter_modes', 'ds_modes', 'stats', 'aliases', 'quality', 'ts', 'age_s', 'counter_total']);

interface Setting {
  field: string;
  label: string;
  kind: 'number' | 'select' | 'button' | 'pulse';
  /** Select options, from the device's own list. */
  options?: (device: Device) => string[];
  /** What a button writes. */
  writes?: Record<string, unknown>;
  min?: number;
  max?: number;
  step?: number;
}

const modeNames = (key: string) => (device: Device): string[] => {
  const modes = device[key];
  if (Array.isArray(modes)) return modes.map(String);
  return modes && typeof modes === 'object' ? Object.keys(modes) : [];
};

const SETTINGS: Record<string, Setting[]> = {
  di: [
    { field: 'debounce', label: 'Debounce (ms)', kind: 'number', min: 0, max: 65535, step: 1 },
    { field: 'mode', label: 'Mode', kind: 'select', options: modeNames('modes') },
    { field: 'ds_mode', label: 'DirectSwitch mode', kind: 'select', options: modeNames('ds_modes') },
    { field: 'counter_mode', label: 'Counter', kind: 'select', options: modeNames('counter_modes') },
    { field: 'counter', label: 'Counter value', kind: 'button', writes: { counter: 0 } },
  ],
  do: [
    { field: 'pulse_ms', label: 'Pulse (s)', kind: 'pulse' },
    { field: 'mode', label: 'Mode', kind: 'select', options: modeNames('modes') },
    { field: 'pwm_freq', label: 'PWM frequency (Hz)', kind: 'number', min: 0, step: 1 },
    { field: 'pwm_duty', label: 'PWM duty (%)', kind: 'number', min: 0, max: 100, step: 1 },
  ],
  ai: [{ field: 'mode', label: 'Mode', kind: 'select', options: modeNames('modes') }],
  // Under Settings rather than on the card: hundreds of registers would mean hundreds of inputs to lay out.
  register: [{ field: 'value', label: 'Value', kind: 'number', min: 0, max: 65535, step: 1 }],
  ao: [{ field: 'mode', label: 'Mode', kind: 'select', options: modeNames('modes') }],
  wd: [
    { field: 'timeout', label: 'Timeout (ms)', kind: 'number', min: 0, max: 65535, step: 1 },
    { field: 'nv_save', label: 'Keep timeout after power-off', kind: 'button', writes: { nv_save: 1 } },
    { field: 'reset', label: 'Board reset', kind: 'button', writes: { reset: 1 } },
  ],
};
SETTINGS['watchdog'] = SETTINGS['wd']!;
// "On for N s": the daemon switches it off (docs/outputs.md#pulses), so a closed tab or a lost phone leaves nothing on.
SETTINGS['ro'] = SETTINGS['led'] = [{ field: 'pulse_ms', label: 'Pulse (s)', kind: 'pulse' }];
/** The longest pulse the daemon takes: 24 h. */
const MAX_PULSE_S = 86_400;

const BUTTON_TEXT: Record<string, string> = { counter: 'Reset counter', nv_save: 'Save to flash', reset: 'Reset' };

export class DeviceView {
  readonly key: string;
  readonly root: HTMLElement;
  device: Device;
  private text = '';
  private readonly nameText: HTMLElement;
  private readonly value: HTMLElement;
  private readonly quality: QualityMark;
  /** Made on the first error only: most cards never need one. */
  private error: HTMLElement | undefined;
  /** Bring controls in line with a state; `force` also overrides what the user is editing. */
  private readonly refreshers: ((device: Device, force: boolean) => void)[] = [];
  private settingsBuilt = false;
  /** The Settings disclosure button; its panel is built on first use, so 500 cards cost no settings DOM. */
  private readonly more: HTMLButtonElement | undefined;
  private settingsPanel: HTMLElement | undefined;
  private switchEl: HTMLButtonElement | undefined;
  private pendingNote: HTMLElement | undefined;
  private writesInFlight = 0;
  /** Lower-case text the search box matches against. */
  haystack = '';
  private readonly trends: Trend[] = [];
  private cardState: CardState = 'live';
  /** What the output is part of ("Cover living_room · up"), made on first use. */
  private roleNote: HTMLElement | undefined;
  /** False for a cover's output: no switch and no pulse, which the daemon would refuse. */
  private switchable = true;

  constructor(device: Device, private readonly actions: Actions, readonly typeLabel: string) {
    this.device = device;
    this.key = `${device.dev}/${device.circuit}`;
    this.nameText = h('span', { class: 'name' });
    this.value = h('span', { class: 'val' });
    const watchdog = device.dev === 'wd' || device.dev === 'watchdog';
    // A watchdog's timeout goes under its name, so the name is never cut.
    const head = watchdog ? h('div', { class: 'head' }, this.nameText) : h('div', { class: 'head' }, this.nameText, this.value);
    const qualityNote = h('p', { class: 'age', hidden: true });
    this.root = h('article', { class: sensorTitle(device) ? 'dev sensor card-live' : 'dev card-live', 'data-key': this.key }, head, qualityNote);
    this.quality = new QualityMark(this.root, qualityNote);
    if (SWITCHES.has(device.dev) || watchdog) head.append(this.buildSwitch());
    if (watchdog) this.root.append(h('div', { class: 'sub' }, this.value));
    // The card's main value gets its chart beside it, in the head; the two stay together when they wrap.
    for (const trended of TRENDED[device.dev] ?? []) head.append(h('span', { class: 'main' }, this.buildTrend(trended.field, trended.label, trended.unit), this.value));
    if (device.dev === '1wdevice' && 'humidity' in device) {
      const rows = h('div', { class: 'readings' });
      for (const reading of MULTI_SENSOR) rows.append(this.buildTrend(reading.field, reading.label, reading.unit));
      this.root.append(rows);
    }
    if (device.dev === 'ao') this.root.append(this.buildRange());
    if (device.dev === 'cover') this.root.append(buildCoverControls(device, (fields) => this.run(fields), this.refreshers));
    if (device.dev === 'automation') this.root.append(buildAutomationControls(device, (fields) => this.run(fields), this.refreshers));
    const settings = SETTINGS[device.dev];
    if (settings || !NOT_ALIASABLE.has(device.dev)) {
      const more = h('button', { type: 'button', class: 'more', text: 'Settings', 'aria-expanded': 'false', 'aria-label': `Settings ${deviceLabel(device)}` });
      more.addEventListener('click', () => {
        if (!this.settingsBuilt) this.buildSettings();
        const open = more.getAttribute('aria-expanded') !== 'true';
        more.setAttribute('aria-expanded', String(open));
        this.settingsPanel!.hidden = !open;
      });
      this.more = more;
      this.root.append(more);
    }
    this.update(device, true);
  }

  /** Applies a new state; answers whether anything on screen changed. */
  update(device: Device, force = false, resetControls = false): boolean {
    const text = JSON.stringify(device);
    if (!force && text === this.text) return false;
    this.text = text;
    this.device = device;
    const name = alias(device);
    const label = deviceLabel(device);
    this.haystack = `${device.dev} ${device.circuit} ${name} ${this.typeLabel}`.toLowerCase();
    // 1-Wire sensors are named by what they are; their long address goes to the small print.
    const title = sensorTitle(device);
    const small = name || title ? `${device.dev} ${device.circuit}${title && typeof device.type === 'string' ? ` · ${device.type}` : ''}` : device.dev;
    if (this.nameText.dataset['label'] !== label) {
      this.nameText.dataset['label'] = label;
      this.nameText.replaceChildren(name || title || String(device.circuit), h('small', { text: small }));
      this.root.setAttribute('aria-label', label);
      if (this.switchEl) this.switchEl.setAttribute('aria-label', label);
      this.more?.setAttribute('aria-label', `Settings ${label}`);
    }
    this.renderValue(device);
    this.quality.show(device);
    for (const refresh of this.refreshers) refresh(device, resetControls);
    for (const trend of this.trends) {
      addPoint(trend.key, device[trend.field]);
      this.drawTrend(trend);
    }
    return true;
  }

  /** Redraws a trend whose history just arrived. */
  redrawTrend(key: string): void {
    for (const trend of this.trends) if (trend.key === key) this.drawTrend(trend);
  }

  /**
   * The output's part in a cover or an interlock, in words under its name. An output that drives a
   * cover has no switch: switching it on is always refused (the cover is commanded instead).
   */
  setRole(role: string, switchable: boolean): void {
    if (!this.roleNote) {
      if (role === '') return;
      this.roleNote = h('p', { class: 'role' });
      this.root.insertBefore(this.roleNote, this.root.children[1] ?? null);
    }
    setText(this.roleNote, role);
    this.roleNote.hidden = role === '';
    this.switchable = switchable;
    if (this.switchEl && this.switchEl.hidden === switchable) this.switchEl.hidden = !switchable;
    this.root.classList.toggle('guarded', role !== '');
  }

  /** The hook for card states: one class per state, `card-live` until told otherwise. */
  setCardState(state: CardState): void {
    if (state === this.cardState) return;
    this.root.classList.replace(`card-${this.cardState}`, `card-${state}`);
    this.cardState = state;
  }

  private buildTrend(field: string, label: string, unit?: string): HTMLElement {
    const key = seriesKey(this.device.dev, String(this.device.circuit), field);
    const svg = svgElement('svg', { viewBox: `0 0 ${SPARK_WIDTH} 24`, width: SPARK_WIDTH, height: 24, 'aria-hidden': 'true', focusable: 'false' });
    const what = `${label || 'value'} ${deviceLabel(this.device)}`;
    const button = h('button', { type: 'button', class: 'spark', 'aria-label': `Trend of ${what}, last hour` });
    button.append(svg);
    const trend: Trend = { key, field, unit: unit ?? '', svg, button };
    button.addEventListener('click', () => this.actions.openTrend(key, `${label || 'Value'} · ${deviceLabel(this.device)}`, this.unitOf(trend)));
    this.trends.push(trend);
    if (!label) return button;
    trend.text = h('span', { class: 'rval' });
    return h('div', { class: 'reading' }, h('span', { class: 'rlabel', text: label }), trend.text, button);
  }

  private unitOf(trend: Trend): string {
    return trend.unit || (typeof this.device.unit === 'string' ? this.device.unit : '');
  }

  private drawTrend(trend: Trend): void {
    drawChart(trend.svg, trend.key, { width: SPARK_WIDTH, height: 24 });
    if (trend.text) {
      const value = this.device[trend.field];
      setText(trend.text, value === null || value === undefined ? '–' : `${formatNumber(value)} ${trend.unit}`);
    }
  }

  showError(message: string): void {
    if (!this.error) {
      if (message === '') return;
      this.error = h('p', { class: 'err', role: 'alert' });
      this.root.append(this.error);
    }
    setText(this.error, message);
  }

  private renderValue(device: Device): void {
    const dev = device.dev;
    if (this.switchEl) {
      if (this.writesInFlight === 0) setAttr(this.switchEl, 'aria-checked', device.value ? 'true' : 'false');
      setText(this.value, dev === 'wd' || dev === 'watchdog' ? `timeout ${formatNumber(device.timeout)} ms${device.was_wd_reset ? ' · fired' : ''}` : '');
      return;
    }
    if (dev === 'di' || dev === 'input') {
      const on = !!device.value;
      let lamp = this.value.firstElementChild;
      if (!lamp) {
        lamp = h('span', { class: 'lamp' });
        this.value.append(lamp, document.createTextNode(''));
      }
      setAttr(lamp, 'data-on', on ? 'true' : 'false');
      // The board's counter wraps and restarts with the board; the meta view's total never goes back (docs/quality.md).
      const total = typeof device.counter_total === 'number' ? ` · total ${formatNumber(device.counter_total)}` : '';
      const counter = device.counter === undefined ? '' : ` · counter ${formatNumber(device.counter)}${total}`;
      setText(this.value.lastChild!, `${on ? 'on' : 'off'}${counter}`);
      return;
    }
    if (dev === 'cover') {
      setText(this.value, coverSummary(device));
      return;
    }
    if (dev === 'automation') {
      setText(this.value, automationSummary(device));
      return;
    }
    if (dev === 'modbus_slave') {
      setText(this.value, slaveState(device));
      return;
    }
    if (dev === '1wdevice') {
      // A DS2438's readings are on rows of their own; a PIO chip shows its pins as bits.
      const lost = device.lost === true ? 'lost' : '';
      if ('humidity' in device) setText(this.value, lost);
      else setText(this.value, lost || (typeof device.value === 'number' ? `pins ${device.value.toString(2).padStart(8, '0')}` : '–'));
      return;
    }
    if (dev === 'temp') {
      setText(this.value, device.lost === true ? 'lost' : `${formatNumber(device.value)} °C`);
      return;
    }
    if (dev === 'device_info') {
      setText(this.value, `model ${String(device.model ?? '–')}${device.sn ? ` · sn ${String(device.sn)}` : ''}`);
      return;
    }
    if ('value' in device) {
      const unit = typeof device.unit === 'string' ? ` ${device.unit}` : '';
      setText(this.value, `${formatNumber(device.value)}${unit}`);
      return;
    }
    // Unknown shapes (new device types) still show their plain fields.
    const parts: string[] = [];
    for (const [field, value] of Object.entries(device)) {
      if (HIDDEN_FIELDS.has(field) || (value !== null && typeof value === 'object')) continue;
      parts.push(`${field} ${formatNumber(value)}`);
    }
    setText(this.value, parts.join(' · '));
  }

  private buildSwitch(): DocumentFragment {
    const button = h('button', { type: 'button', role: 'switch', class: 'switch', 'aria-checked': 'false', 'aria-label': deviceLabel(this.device) });
    const note = h('span', { class: 'pending' });
    this.switchEl = button;
    this.pendingNote = note;
    button.addEventListener('click', () => {
      const target = button.getAttribute('aria-checked') === 'true' ? 0 : 1;
      setAttr(button, 'aria-checked', target ? 'true' : 'false');
      this.run({ value: target });
    });
    const fragment = document.createDocumentFragment();
    fragment.append(note, button);
    return fragment;
  }

  /** Runs a write: pending look meanwhile, then the confirmed state or the error and the true state. */
  private run(fields: Record<string, unknown>): void {
    this.writesInFlight++;
    this.showError('');
    if (this.switchEl) {
      this.switchEl.setAttribute('aria-busy', 'true');
      setText(this.pendingNote!, 'pending');
    }
    this.actions
      .write(this, fields)
      .then(
        (confirmed) => {
          if (confirmed) this.update(confirmed);
          return false;
        },
        (error: unknown) => {
          this.showError(error instanceof Error ? error.message : String(error));
          return true;
        },
      )
      .then((failed) => {
        this.writesInFlight--;
        if (this.writesInFlight === 0 && this.switchEl) {
          this.switchEl.removeAttribute('aria-busy');
          setText(this.pendingNote!, '');
        }
        // A refused value must not stay in its field looking accepted.
        this.update(this.device, true, failed);
      });
  }

  private buildRange(): HTMLElement {
    const label = deviceLabel(this.device);
    const slider = h('input', { type: 'range', 'aria-label': label });
    const number = h('input', { type: 'number', 'aria-label': `${label} value` });
    const apply = (device: Device, force = false) => {
      const [min, max] = aoRange(device);
      const step = String((max - min) / 1000 || 0.01);
      for (const input of [slider, number]) {
        setAttr(input, 'min', String(min));
        setAttr(input, 'max', String(max));
        setAttr(input, 'step', step);
      }
      const lab = deviceLabel(device);
      setAttr(slider, 'aria-label', lab);
      setAttr(number, 'aria-label', `${lab} value`);
      const value = typeof device.value === 'number' ? String(device.value) : '';
      if ((force || document.activeElement !== slider) && slider.value !== value) slider.value = value;
      if ((force || document.activeElement !== number) && number.value !== value) number.value = value;
    };
    slider.addEventListener('input', () => (number.value = slider.value));
    slider.addEventListener('change', () => this.run({ value: Number(slider.value) }));
    number.addEventListener('change', () => {
      if (number.value !== '') this.run({ value: Number(number.value) });
    });
    this.refreshers.push(apply);
    return h('div', { class: 'range' }, slider, number);
  }

  private buildSettings(): void {
    this.settingsBuilt = true;
    const grid = h('div', { class: 'settings' });
    const label = () => deviceLabel(this.device);
    for (const setting of SETTINGS[this.device.dev] ?? []) {
      if (setting.kind !== 'button' && setting.kind !== 'pulse' && !(setting.field in this.device)) continue;
      if (this.device.dev === 'register' && String(this.device.circuit).endsWith('_inp')) continue;
      const id = `${this.key}/${setting.field}`;
      const name = `${setting.label} ${label()}`;
      let control: HTMLElement;
      if (setting.kind === 'pulse') {
        if (!this.switchable) continue;
        const input = h('input', { id, type: 'number', 'aria-label': `Pulse seconds ${label()}`, min: 0.1, max: MAX_PULSE_S, step: 0.1, value: 1 });
        const button = h('button', { type: 'button', text: 'Pulse', 'aria-label': `Pulse ${label()}` });
        button.addEventListener('click', () => {
          const seconds = Number(input.value);
          if (!(seconds > 0 && seconds <= MAX_PULSE_S)) {
            this.showError(`A pulse lasts from 0.1 s to ${MAX_PULSE_S} s`);
            return;
          }
          this.run({ value: 1, pulse_ms: Math.round(seconds * 1000) });
        });
        grid.append(h('label', { for: id, text: setting.label }), h('div', { class: 'row pulse' }, input, button));
        continue;
      }
      if (setting.kind === 'button') {
        const button = h('button', { type: 'button', id, text: BUTTON_TEXT[setting.field] ?? setting.label, 'aria-label': `${BUTTON_TEXT[setting.field] ?? setting.label} ${label()}` });
        button.addEventListener('click', () => this.run(setting.writes ?? {}));
        control = button;
      } else if (setting.kind === 'select') {
        const select = h('select', { id, 'aria-label': name });
        const refresh = (device: Device, force = false) => {
          const options = setting.options?.(device) ?? [];
          if (select.options.length !== options.length) select.replaceChildren(...options.map((option) => h('option', { value: option, text: option })));
          const current = String(device[setting.field] ?? '');
          if ((force || document.activeElement !== select) && select.value !== current) select.value = current;
        };
        select.addEventListener('change', () => this.run({ [setting.field]: select.value }));
        this.refreshers.push(refresh);
        refresh(this.device);
        control = select;
      } else {
        const input = h('input', { id, type: 'number', 'aria-label': name, min: setting.min, max: setting.max, step: setting.step });
        const refresh = (device: Device, force = false) => {
          const current = device[setting.field] === null || device[setting.field] === undefined ? '' : String(device[setting.field]);
          if ((force || document.activeElement !== input) && input.value !== current) input.value = current;
        };
        input.addEventListener('change', () => {
          if (input.value !== '') this.run({ [setting.field]: Number(input.value) });
        });
        this.refreshers.push(refresh);
        refresh(this.device);
        control = input;
      }
      grid.append(h('label', { for: id, text: setting.label }), control);
    }
    if (!NOT_ALIASABLE.has(this.device.dev)) {
      const id = `${this.key}/alias`;
      const input = h('input', { id, type: 'text', maxlength: 64, 'aria-label': `Alias ${label()}`, placeholder: 'no alias', value: alias(this.device) });
      const button = h('button', { type: 'button', text: 'Rename', 'aria-label': `Rename ${label()}` });
      const rename = () => this.run({ alias: input.value.trim() });
      button.addEventListener('click', rename);
      input.addEventListener('keydown', (event) => {
        if (event.key === 'Enter') rename();
      });
      this.refreshers.push((device, force) => {
        if (force || document.activeElement !== input) input.value = alias(device);
      });
      grid.append(h('div', { class: 'row wide' }, h('label', { for: id, text: 'Alias' }), input, button));
    }
    grid.id = `${this.key}/settings`;
    grid.hidden = true;
    this.more!.setAttribute('aria-controls', grid.id);
    this.settingsPanel = grid;
    this.root.insertBefore(grid, this.error ?? null);
  }
}

function aoRange(device: Device): [number, number] {
  const own = device.range;
  if (Array.isArray(own) && own.length === 2) return [Number(own[0]), Number(own[1])];
  const modes = device.modes as Record<string, { range?: unknown }> | undefined;
  const range = modes && typeof device.mode === 'string' ? modes[device.mode]?.range : undefined;
  if (Array.isArray(range) && range.length === 2) return [Number(range[0]), Number(range[1])];
  return [0, 10];
}

/** online / degraded / offline: the bus work's `state` when it reports one, else `online`. */
export function slaveState(device: Device): string {
  if (typeof device.state === 'string') return device.state;
  return device.online === false ? 'offline' : 'online';
}
