import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../interop/free-port.js';
import { tempDir } from './temp-dir.js';
import { endWithThisProcess } from './orphan-guard.mjs';

// nginx (Debian's nginx-light) as a child process of the test: in the
// foreground, as the current user, with its prefix, pid file, logs and temp
// directories in a temp directory of its own, serving one site.

export const NGINX = process.env.IOGATE_NGINX ?? '/usr/sbin/nginx';

/** Why nginx tests cannot run here, or undefined when they can. */
export function nginxMissing(): string | undefined {
  return existsSync(NGINX) ? undefined : `${NGINX} not installed (apt-get install nginx-light)`;
}

export interface RunningNginx {
  port: number;
  baseUrl: string;
  dir: string;
  /** nginx's error log so far, for failure messages. */
  errors(): string;
  stop(): Promise<void>;
}

/**
 * Starts nginx with the site `site(port)` returns, `port` being a free port it
 * is to listen on (127.0.0.1).
 */
export async function startNginx(site: (port: number) => string): Promise<RunningNginx> {
  const dir = tempDir('iogate-nginx-');
  for (const temp of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, temp));
  const port = await freePort();
  writeFileSync(join(dir, 'site.conf'), site(port));
  // As root (CI), workers would switch to `nobody` and lose the temp directory.
  const user = process.getuid?.() === 0 ? `user ${userInfo().username};\n` : '';
  writeFileSync(
    join(dir, 'nginx.conf'),
    `${user}worker_processes 1;
events { worker_connections 128; }
http {
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  include ${dir}/site.conf;
}
`,
  );
  const errorLog = join(dir, 'error.log');
  const child: ChildProcess = endWithThisProcess(spawn(
    NGINX,
    ['-p', `${dir}/`, '-e', errorLog, '-c', join(dir, 'nginx.conf'), '-g', `daemon off; pid ${join(dir, 'nginx.pid')}; error_log ${errorLog} notice;`],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  ));
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => (stderr += chunk));
  const errors = () => `${stderr}${existsSync(errorLog) ? readFileSync(errorLog, 'utf8') : ''}`;
  const exited = once(child, 'exit');
  const deadline = Date.now() + 10_000;
  while (!(await accepts(port))) {
    if (child.exitCode !== null) throw new Error(`nginx exited with ${child.exitCode}:\n${errors()}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`nginx did not listen on ${port} within 10 s:\n${errors()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    port,
    baseUrl: `http://127.0.0.1:${port}`,
    dir,
    errors,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      // SIGTERM is nginx's fast shutdown: open WebSockets are cut, not waited for.
      child.kill('SIGTERM');
      await exited;
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * `text` with each [from, to] replaced, every `from` required to be there:
 * a changed upstream file fails loudly instead of being served half-edited.
 */
export function rewrite(text: string, replacements: ReadonlyArray<readonly [string | RegExp, string]>): string {
  let result = text;
  for (const [from, to] of replacements) {
    const found = typeof from === 'string' ? result.includes(from) : from.test(result);
    if (!found) throw new Error(`expected ${String(from)} in the site configuration`);
    result = typeof from === 'string' ? result.split(from).join(to) : result.replace(new RegExp(from.source, from.flags.includes('g') ? from.flags : `${from.flags}g`), to);
  }
  return result;
}
