import { setAttr, setText } from './dom.js';
import { token } from './api.js';

// The Sparkplug edge node's session in the header, read from /metrics every
// few seconds: live on which server, waiting for the primary host, or away
// with how many changes are buffered. Hidden when the edge node is off.

const POLL_MS = 5000;

function sample(text: string, name: string): { value: number; labels: string } | undefined {
  const line = text.split('\n').find((row) => row.startsWith(`${name} `) || row.startsWith(`${name}{`));
  if (line === undefined) return undefined;
  const labels = line.startsWith(`${name}{`) ? line.slice(name.length + 1, line.lastIndexOf('}')) : '';
  return { value: Number(line.slice(line.lastIndexOf(' ') + 1)), labels };
}

export function describeSparkplug(text: string): { state: 'live' | 'connecting' | 'down'; text: string } | undefined {
  const connected = sample(text, 'iogate_sparkplug_connected');
  if (connected === undefined) return undefined;
  const server = /server="([^"]*)"/.exec(connected.labels)?.[1] ?? '';
  const born = sample(text, 'iogate_sparkplug_born')?.value === 1;
  const waiting = sample(text, 'iogate_sparkplug_waiting_for_host')?.value === 1;
  const bdSeq = sample(text, 'iogate_sparkplug_bdseq')?.value;
  const buffered = sample(text, 'iogate_sparkplug_buffer_changes')?.value ?? 0;
  const dropped = sample(text, 'iogate_sparkplug_buffer_dropped_total')?.value ?? 0;
  const kept = `${buffered} change${buffered === 1 ? '' : 's'} kept${dropped > 0 ? `, ${dropped} dropped` : ''}`;
  if (born) return { state: 'live', text: `Sparkplug: live on ${server} (bdSeq ${bdSeq})${buffered > 0 ? `, replaying ${kept}` : ''}` };
  if (connected.value === 1 && waiting) return { state: 'connecting', text: `Sparkplug: waiting for the primary host on ${server}; ${kept}` };
  return { state: 'down', text: `Sparkplug: no server; ${kept}` };
}

export function startSparkplugStatus(element: HTMLElement): void {
  let timer: number | undefined;
  const poll = async () => {
    let text: string;
    try {
      const current = token();
      const response = await fetch('/metrics', { cache: 'no-store', headers: current ? { Authorization: `Bearer ${current}` } : {} });
      if (!response.ok) return;
      text = await response.text();
    } catch {
      return;
    }
    const status = describeSparkplug(text);
    element.hidden = status === undefined;
    if (status === undefined) {
      // The edge node is off (it starts with the daemon or not at all): stop asking.
      window.clearInterval(timer);
      return;
    }
    setAttr(element, 'data-state', status.state);
    setText(element, status.text);
  };
  timer = window.setInterval(() => void poll(), POLL_MS);
  void poll();
}
