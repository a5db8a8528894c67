// POST a JSON body, or raw text for malformed-body cases, and get status,
// headers and the parsed reply (undefined when the reply has no body).

export interface Reply {
  status: number;
  headers: Headers;
  body: any;
}

export async function postBody(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}
