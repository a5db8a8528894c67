import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

// An HTTP listener for webhooks that keeps each request's body as text.

export interface WebhookReceiver {
  port: number;
  bodies: string[];
  close(): void;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const bodies: string[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      bodies.push(body);
      res.end('ok');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    bodies,
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}
