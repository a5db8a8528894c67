// The panel's only door to iogate: same-origin HTTP with EVOK's envelopes.
// The token (when the API wants one) lives in sessionStorage: it is gone
// when the tab closes and never written anywhere else.

export type Device = Record<string, unknown> & { dev: string; circuit: string };

const TOKEN_KEY = 'iogate-token';

export function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value: string | null): void {
  if (value === null) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, value);
}

/** Thrown for 401: the caller asks the user for a token and tries again. */
export class NeedsToken extends Error {}

function headers(json: boolean): Record<string, string> {
  const result: Record<string, string> = { Accept: 'application/json' };
  if (json) result['Content-Type'] = 'application/json';
  const current = token();
  if (current) result['Authorization'] = `Bearer ${current}`;
  return result;
}

/** EVOK's error envelope is {"success": false, "errors": {"Kind": "message"}}; anything else is shown as it came. */
function errorText(status: number, body: unknown): string {
  if (body && typeof body === 'object' && 'errors' in body) {
    const errors = (body as { errors: unknown }).errors;
    if (errors && typeof errors === 'object') {
      const parts = Object.entries(errors as Record<string, unknown>).map(([kind, message]) => `${kind}: ${String(message)}`);
      if (parts.length > 0) return parts.join('; ');
    }
  }
  return `HTTP ${status}`;
}

export async function call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers: headers(body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
    });
  } catch {
    throw new Error('iogate cannot be reached');
  }
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (response.status === 401) throw new NeedsToken(errorText(401, parsed));
  if (!response.ok) throw new Error(errorText(response.status, parsed));
  if (parsed && typeof parsed === 'object' && (parsed as { success?: unknown }).success === false) {
    throw new Error(errorText(response.status, parsed));
  }
  return parsed;
}

export async function listAll(): Promise<Device[]> {
  const list = await call('GET', '/rest/all');
  return Array.isArray(list) ? (list as Device[]) : [];
}

export async function listType(type: string): Promise<Device[]> {
  const list = await call('GET', `/rest/${type}/all`);
  return Array.isArray(list) ? (list as Device[]) : [];
}

/** Writes fields and answers the state the board confirmed. */
export async function write(dev: string, circuit: string, fields: Record<string, unknown>): Promise<Device | undefined> {
  const reply = (await call('POST', `/json/${encodeURIComponent(dev)}/${encodeURIComponent(circuit)}`, fields)) as { result?: unknown } | undefined;
  const result = reply?.result;
  return result && typeof result === 'object' && 'dev' in result ? (result as Device) : undefined;
}

export async function saveAliases(): Promise<void> {
  await call('POST', '/json/run/alias', { save: 1 });
}

export function socketUrl(): string {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const current = token();
  return `${scheme}//${location.host}/ws${current ? `?token=${encodeURIComponent(current)}` : ''}`;
}
