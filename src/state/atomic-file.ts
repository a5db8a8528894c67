// Atomic replacement of a small state file. Everything iogate keeps across a
// restart (aliases, Sparkplug's bdSeq, counter totals, buffered changes) is
// written through here, so a crash or a power cut at any moment leaves either
// the old or the new complete file, never a torn one.
import { mkdir, open, rename, stat, unlink } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * Replaces the file: write a temporary file in the same directory, flush it to
 * disk, rename it over the target, then flush the directory so the rename
 * itself is durable. The temporary name is fixed (one writer per file is
 * assumed), so a write cut short leaves no litter beyond one file that the
 * next write reuses. A write that fails (disk full, read-only, file size
 * limit) rejects and leaves the old file as it was. The new file gets the old
 * one's permissions and, where the process may set it, its owner: a user who
 * made it 0600 keeps it so.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o644): Promise<void> {
  const dir = dirname(path);
  const temp = join(dir, `.${basename(path)}.tmp`);
  await mkdir(dir, { recursive: true });
  const previous = await stat(path).catch(() => undefined);
  try {
    const handle = await open(temp, 'w', mode);
    try {
      if (previous) await keepModeAndOwner(handle, previous);
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
  } catch (error) {
    // The write error is what matters; a temp file that cannot be removed is reused next time.
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  await syncDirectory(dir);
}

type FileHandle = Awaited<ReturnType<typeof open>>;

async function keepModeAndOwner(handle: FileHandle, previous: Stats): Promise<void> {
  await handle.chmod(previous.mode & 0o7777);
  try {
    await handle.chown(previous.uid, previous.gid);
  } catch (error) {
    // Only root may give a file away; a file we may replace but not chown
    // was not ours to begin with, and keeps its mode at least.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') throw error;
  }
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } catch (error) {
    // Some filesystems cannot fsync a directory; the rename has happened, so
    // the save stands, only its durability across a power cut is weaker.
    if (!['EINVAL', 'ENOTSUP', 'EISDIR', 'EPERM'].includes((error as NodeJS.ErrnoException).code ?? '')) throw error;
  } finally {
    await handle.close();
  }
}
