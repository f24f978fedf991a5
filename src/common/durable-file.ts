/**
 * Durable, atomic replacement of a file: sandbox definitions, query-priority configuration, index
 * metadata (async), the engine's index cache (sync).
 */
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { type FileHandle, mkdir, open, rename, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';

/** Error codes with which some platforms refuse to fsync a directory; durability is best effort there. */
const DIRECTORY_SYNC_REFUSED = new Set(['EISDIR', 'EINVAL', 'EPERM']);

/**
 * Replaces `path` with `text` (UTF-8, mode 0o600) so that a crash at any moment leaves the old content
 * or the new one, whole: write `<path>.tmp-<pid>-<random>`, fsync it, rename it over `path`, fsync the
 * directory. The directory is created if missing. A crash can leave the temp file behind.
 * @throws the file system's error; the temp file is removed and `path` is unchanged (unless only the
 *   final directory fsync failed).
 */
export async function writeFileAtomically(path: string, text: string): Promise<void> {
  const directory = dirname(path);
  await mkdir(directory, { recursive: true });
  const temp = `${path}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`;
  const handle = await open(temp, 'wx', 0o600);
  try {
    try {
      await handle.writeFile(text, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
    await syncDirectory(directory);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}

/** Makes a rename in `directory` durable; a no-op where the platform refuses to fsync directories. */
export async function syncDirectory(directory: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(directory, 'r');
    await handle.sync();
  } catch (error) {
    if (!DIRECTORY_SYNC_REFUSED.has((error as NodeJS.ErrnoException).code ?? '')) throw error;
  } finally {
    await handle?.close();
  }
}

/**
 * `writeFileAtomically` for code that cannot await (the engine's index cache, built at start-up):
 * the same steps, blocking. `mode` is the new file's permission bits (default 0o600).
 * @throws the file system's error; the temp file is removed and `path` is unchanged (unless only the
 *   final directory fsync failed).
 */
export function writeFileAtomicallySync(path: string, text: string, mode = 0o600): void {
  const directory = dirname(path);
  mkdirSync(directory, { recursive: true });
  const temp = `${path}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`;
  try {
    const fd = openSync(temp, 'wx', mode);
    try {
      writeFileSync(fd, text, 'utf8');
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
  syncDirectorySync(directory);
}

/** `syncDirectory`, blocking. */
function syncDirectorySync(directory: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(directory, 'r');
    fsyncSync(fd);
  } catch (error) {
    if (!DIRECTORY_SYNC_REFUSED.has((error as NodeJS.ErrnoException).code ?? '')) throw error;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
