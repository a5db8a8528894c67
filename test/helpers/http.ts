// Minimal HTTP client calls for API tests: status plus parsed JSON body.

/** Parsed JSON seen loosely: any property can be looked at, and is checked by assertions. */
export interface Loose {
  readonly [key: string]: Loose | undefined;
}

export interface Reply {
  status: number;
  body: Loose;
}

/** A JSON array reply as a list. */
export function list(value: Loose | undefined): Loose[] {
  if (!Array.isArray(value)) throw new TypeError(`expected a JSON array, got ${JSON.stringify(value)}`);
  return value as Loose[];
}

async function reply(response: Response): Promise<Reply> {
  const text = await response.text();
  return { status: response.status, body: text === '' ? {} : (JSON.parse(text) as Loose) };
}

export async function get(url: string): Promise<Reply> {
  return reply(await fetch(url));
}

/** A `/rest` write as a browser form sends it: every value a string. */
export async function postForm(url: string, fields: Record<string, string>): Promise<Reply> {
  return reply(
    await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    }),
  );
}

export async function postJson(url: string, body: unknown): Promise<Reply> {
  return reply(await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) }));
}

/** Poll `check` until it returns true (or throw after `timeoutMs`). */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
