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

/** What a refusal means to a user, by status; the daemon's own message says why. */
const REFUSED: Record<number, string> = {
  400: 'Not accepted',
  403: 'Not allowed with this token',
  404: 'Not found',
  409: 'Refused',
  503: 'The board does not answer',
  507: 'Refused: the controller cannot note it',
};

/**
 * EVOK's error envelope is {"success": false, "errors": {"Kind": "message"}}: shown as a sentence,
 * "Refused: ro 2_06 stays off: ro 2_05 is on …", without the error class a user cannot act on.
 */
function errorText(status: number, body: unknown): string {
  const head = REFUSED[status] ?? (status >= 500 ? 'The controller could not do it' : '');
  if (body && typeof body === 'object' && 'errors' in body) {
    const errors = (body as { errors: unknown }).errors;
    if (errors && typeof errors === 'object') {
      const parts = Object.values(errors as Record<string, unknown>).map(String);
      if (parts.length > 0) return head ? `${head}: ${parts.join('; ')}` : parts.join('; ');
    }
  }
  return head || `HTTP ${status}`;
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

// Reads and the live feed ask for the meta view: every state comes with its quality and age.
export async function listAll(): Promise<Device[]> {
  const list = await call('GET', '/rest/all?meta=1');
  return Array.isArray(list) ? (list as Device[]) : [];
}

export async function listType(type: string): Promise<Device[]> {
  const list = await call('GET', `/rest/${type}/all?meta=1`);
  return Array.isArray(list) ? (list as Device[]) : [];
}

/** Writes fields and answers the state the board confirmed. */
export async function write(dev: string, circuit: string, fields: Record<string, unknown>): Promise<Device | undefined> {
  const reply = (await call('POST', `/json/${encodeURIComponent(dev)}/${encodeURIComponent(circuit)}`, fields)) as { result?: unknown } | undefined;
  const result = reply?.result;
  return result && typeof result === 'object' && 'dev' in result ? (result as Device) : undefined;
}

/** iogate's interlock groups (`/rest/interlock`, not in EVOK's listings); none when the daemon has none. */
export async function listInterlocks(): Promise<Device[]> {
  try {
    return await listType('interlock');
  } catch (error) {
    if (error instanceof NeedsToken) throw error;
    return [];
  }
}

export async function saveAliases(): Promise<void> {
  await call('POST', '/json/run/alias', { save: 1 });
}

export function socketUrl(): string {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const current = token();
  return `${scheme}//${location.host}/ws?meta=1${current ? `&token=${encodeURIComponent(current)}` : ''}`;
}
