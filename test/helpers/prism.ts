import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { appendFileSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { freePort } from '../interop/free-port.js';
import { endWithThisProcess } from './orphan-guard.mjs';

// The API tap of the interop and client suites: with IOGATE_PRISM naming a
// Prism binary (.ci/prism.sh installs a pinned one), the HTTP traffic a test
// sends to the daemon goes through two validating proxies,
//
//   test → Prism with Unipi's Evok_API_OAS.yaml → Prism with iogate's /openapi.json (--errors) → daemon
//
// The inner one answers a request or reply that breaks iogate's own document
// with an error, and the tap's stop() fails the test with every violation it
// logged. The outer one only records what breaks EVOK's document (to
// IOGATE_PRISM_EVOK_REPORT, one JSON line each) for docs/differences-from-evok.md.
// Without IOGATE_PRISM the tap is the daemon itself.

export const OPENAPI = fileURLToPath(new URL('../../dist/openapi.json', import.meta.url));
const EVOK_OAS = process.env['IOGATE_EVOK_OAS'] ?? fileURLToPath(new URL('../../../shared/reference/Evok_API_OAS.yaml', import.meta.url));

export interface Violation {
  document: 'iogate' | 'evok';
  request: string;
  message: string;
}

export interface Tap {
  /** Where the test sends its HTTP API requests. */
  url: string;
  violations(): Violation[];
  /** Stops the proxies; throws when iogate's document was violated. */
  stop(): Promise<void>;
}

export async function startTap(upstream: string): Promise<Tap> {
  const binary = process.env['IOGATE_PRISM'];
  if (!binary) return { url: upstream, violations: () => [], stop: async () => {} };
  const ours = await startPrism(binary, OPENAPI, upstream, 'iogate', true);
  const evok = existsSync(EVOK_OAS) ? await startPrism(binary, EVOK_OAS, ours.url, 'evok', false).catch(async (error) => {
    await ours.stop();
    throw error;
  }) : undefined;
  return {
    url: (evok ?? ours).url,
    violations: () => [...ours.violations, ...(evok?.violations ?? [])],
    async stop() {
      await evok?.stop();
      await ours.stop();
      const report = process.env['IOGATE_PRISM_EVOK_REPORT'];
      if (report && evok) for (const violation of evok.violations) appendFileSync(report, `${JSON.stringify(violation)}\n`);
      if (ours.violations.length > 0) {
        throw new Error(`iogate's OpenAPI document was violated:\n${ours.violations.map((v) => `  ${v.request}: ${v.message}`).join('\n')}`);
      }
    },
  };
}

interface RunningPrism {
  url: string;
  violations: Violation[];
  stop(): Promise<void>;
}

async function startPrism(binary: string, document: string, upstream: string, name: Violation['document'], errors: boolean): Promise<RunningPrism> {
  const port = await freePort();
  const args = ['proxy', document, upstream, '--host', '127.0.0.1', '--port', String(port), ...(errors ? ['--errors'] : [])];
  const child: ChildProcess = endWithThisProcess(spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } }));
  const violations: Violation[] = [];
  let output = '';
  let lastRequest = '(before any request)';
  let pending = '';
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      pending += chunk.toString();
      let newline: number;
      while ((newline = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        const request = /\[HTTP SERVER\] (\w+) (\S+)/.exec(line);
        if (request) lastRequest = `${request[1]!.toUpperCase()} ${request[2]}`;
        const violation = /Violation: (.*)$/.exec(line);
        if (violation) violations.push({ document: name, request: lastRequest, message: violation[1]!.trim() });
        if (line.includes('Prism is listening')) resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`prism (${name}) exited with ${code} before listening:\n${output}`)));
  });
  const deadline = setTimeout(() => child.kill('SIGKILL'), 60_000);
  try {
    await ready;
  } finally {
    clearTimeout(deadline);
  }
  return {
    url: `http://127.0.0.1:${port}`,
    violations,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}
