import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

// Node-RED and the palettes the suite runs in it come from the npm registry,
// installed at test time into a cache under node_modules/ (not dependencies of
// iogate: only this suite uses them), once per version, shared by the files.

const run = promisify(execFile);
const CACHE = fileURLToPath(new URL('../../node_modules/.cache/iogate-clients/', import.meta.url));
export const NODE_RED_VERSION = process.env.IOGATE_NODE_RED_VERSION ?? '4';
const NODE_RED_HOME = join(CACHE, `node-red-${NODE_RED_VERSION}`);
export const NODE_RED_MAIN = join(NODE_RED_HOME, 'node_modules/node-red/red.js');

/** `npm install name@version` into its own cache folder, unless it is there; the installed package's folder. */
async function cachedInstall(name: string, version: string): Promise<string> {
  const home = join(CACHE, `${name}-${version}`);
  const installed = join(home, 'node_modules', name);
  if (existsSync(join(installed, 'package.json'))) return installed;
  mkdirSync(home, { recursive: true });
  writeFileSync(join(home, 'package.json'), `{"name":"iogate-clients-${name}","private":true}\n`);
  await run('npm', ['install', '--no-audit', '--no-fund', '--omit=dev', '--omit=peer', `${name}@${version}`], { cwd: home, timeout: 600_000 });
  return installed;
}

export async function installNodeRed(): Promise<void> {
  await cachedInstall('node-red', NODE_RED_VERSION);
}

/**
 * A palette from the registry in a Node-RED user directory: installed once
 * into the cache, then linked into `userDir/node_modules`, where Node-RED
 * looks for nodes (its dependencies resolve from the cache, the link's target).
 */
export async function addPalette(userDir: string, name: string, version: string): Promise<void> {
  const installed = await cachedInstall(name, version);
  mkdirSync(join(userDir, 'node_modules'), { recursive: true });
  symlinkSync(installed, join(userDir, 'node_modules', name), 'dir');
}
