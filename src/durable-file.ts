/** Durable, atomic replacement of a small file (sandbox definitions, query-priority configuration). */
import { randomBytes } from 'node:crypto';
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
