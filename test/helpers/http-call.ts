import { request, type IncomingHttpHeaders } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { confinedYaml } from './confined-config.js';
import { tempDir } from './temp-dir.js';

// Plain node:http requests, so tests control every header (Origin, Host,
// Authorization) exactly, which browser-like fetch implementations may not.

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** The parsed body when it is JSON, else undefined. */
  json: any;
}

export function httpCall(
  baseUrl: string,
  path: string,
  { method = 'GET', headers = {}, body }: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(baseUrl + path, { method, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        let json: unknown;
        if (res.headers['content-type']?.startsWith('application/json') && text !== '') json = JSON.parse(text);
        resolve({ status: res.statusCode!, headers: res.headers, text, json });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

export function bearer(token: string): Record<string, string> {
  return { Authorization: `Bearer ${token}` };
}

export const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };

/**
 * A config.yaml in a fresh directory (also a good cwd for the daemon); returns
 * both paths. Aliases go to that directory, never to EVOK's /var/lib/evok.
 */
export function configFile(yaml: string, prefix = 'iogate-security-'): { dir: string; file: string } {
  const dir = tempDir(prefix);
  const file = join(dir, 'config.yaml');
  writeFileSync(file, confinedYaml(yaml));
  return { dir, file };
}

/** One simulated Neuron board, so the tests have di 1_01.. and do 1_01.. to use. */
export const SIMULATED_BUS = `
comm_channels:
  SIM:
    type: SIMULATOR
    devices:
      1:
        model: '00'
`;
