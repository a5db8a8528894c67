import type { ServerResponse } from 'node:http';

// An abort signal for "the client of this HTTP request has gone": the
// connection closed before the response was sent. Writes still waiting for
// the line are then dropped instead of being sent for nobody.

export function clientGone(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}
