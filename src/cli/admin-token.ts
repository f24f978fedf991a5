/**
 * The admin token of `query-sandbox serve`: `QUERY_SANDBOX_ADMIN_TOKEN` when set, else a random one
 * made at each start, written to `<dataDir>/admin-token` readable only by its owner (mode 0600), and
 * printed once. With the environment variable set, an old token file is removed.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { InvalidArgumentError } from '../errors.js';

export interface AdminToken {
  readonly token: string;
  /** Where a generated token was written; undefined when it came from the environment. */
  readonly file: string | undefined;
}

/** Shortest token accepted from the environment, characters. */
export const MIN_TOKEN_LENGTH = 16;

/**
 * Checks a token or secret taken from the environment variable `name`.
 * @throws InvalidArgumentError naming `name`, with the first characters and the length only.
 */
export function checkTokenText(name: string, value: string): string {
  if (value.length < MIN_TOKEN_LENGTH || /\s/.test(value)) {
    throw new InvalidArgumentError(
      name,
      `must be at least ${MIN_TOKEN_LENGTH} characters without spaces`,
      `${value.slice(0, 4)}... (${value.length} characters)`,
    );
  }
  return value;
}

/**
 * @throws InvalidArgumentError for a token from the environment that is too short or has spaces.
 */
export async function resolveAdminToken(env: NodeJS.ProcessEnv, dataDir: string): Promise<AdminToken> {
  const fromEnv = env['QUERY_SANDBOX_ADMIN_TOKEN'];
  if (fromEnv !== undefined && fromEnv !== '') {
    checkTokenText('QUERY_SANDBOX_ADMIN_TOKEN', fromEnv);
    // A token file from an earlier start would now be stale: remove it rather than mislead.
    await unlink(path.join(dataDir, 'admin-token')).catch(() => {});
    return { token: fromEnv, file: undefined };
  }
  const token = randomBytes(24).toString('base64url');
  await mkdir(dataDir, { recursive: true });
  const file = path.join(dataDir, 'admin-token');
  const temp = `${file}.tmp-${process.pid}`;
  const handle = await open(temp, 'w', 0o600);
  try {
    await handle.writeFile(`${token}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temp, file);
  } catch (error) {
    await unlink(temp).catch(() => {});
    throw error;
  }
  return { token, file };
}
