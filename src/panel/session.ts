// The panel's login: who is logged in (`GET /auth/session`), logging in and
// out. The session itself is an HttpOnly cookie the page never sees; the
// browser sends it with every request and the WebSocket upgrade.

export interface SessionInfo {
  /** The logged-in user, or null. */
  user: string | null;
  /** What this page may do now (a session, the loopback exemption…), or null when nothing. */
  scope: 'read' | 'write' | 'admin' | null;
  /** Whether the controller has panel users at all (then the panel offers a login form). */
  users: boolean;
}

const NOBODY: SessionInfo = { user: null, scope: null, users: false };

export async function sessionInfo(): Promise<SessionInfo> {
  try {
    const response = await fetch('/auth/session', { cache: 'no-store', headers: { Accept: 'application/json' } });
    if (!response.ok) return NOBODY;
    const body = (await response.json()) as { result?: SessionInfo };
    return body.result ?? NOBODY;
  } catch {
    return NOBODY;
  }
}

/** Undefined when logged in, else the sentence to show. */
export async function logIn(user: string, password: string): Promise<string | undefined> {
  try {
    const response = await fetch('/auth/login', { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json' }, body: JSON.stringify({ user, password }), cache: 'no-store' });
    if (response.ok) return undefined;
    const body = (await response.json().catch(() => undefined)) as { errors?: Record<string, string> } | undefined;
    return Object.values(body?.errors ?? {})[0] ?? `Login failed (HTTP ${response.status})`;
  } catch {
    return 'iogate cannot be reached';
  }
}

export async function logOut(): Promise<void> {
  await fetch('/auth/logout', { method: 'POST', cache: 'no-store' }).catch(() => undefined);
}
