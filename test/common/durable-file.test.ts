import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeFileAtomically, writeFileAtomicallySync } from '../../src/common/durable-file.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'durable-file-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe.each([
  ['writeFileAtomically', (path: string, text: string) => writeFileAtomically(path, text)],
  ['writeFileAtomicallySync', async (path: string, text: string) => writeFileAtomicallySync(path, text)],
])('%s', (_name, write) => {
  it('replaces the file whole, mode 0o600, and leaves no temp file', async () => {
    const path = join(dir, 'a.json');
    writeFileSync(path, 'old');
    await write(path, '{"new": true}');
    expect(readFileSync(path, 'utf8')).toBe('{"new": true}');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['a.json']);
  });

  it('creates the missing directory', async () => {
    const path = join(dir, 'x', 'y', 'b.json');
    await write(path, 'b');
    expect(readFileSync(path, 'utf8')).toBe('b');
  });

  it('leaves the old content and no temp file when the rename fails', async () => {
    // A directory where the file should be: the write succeeds, the rename over it fails.
    const path = join(dir, 'taken');
    await write(join(path, 'inner'), 'keep');
    await expect(write(path, 'new')).rejects.toThrow();
    expect(readFileSync(join(path, 'inner'), 'utf8')).toBe('keep');
    expect(readdirSync(dir)).toEqual(['taken']);
  });
});

describe('writeFileAtomicallySync', () => {
  it('takes the mode of the new file', () => {
    const path = join(dir, 'c.json');
    writeFileAtomicallySync(path, 'c', 0o644);
    expect(statSync(path).mode & 0o777).toBe(0o644);
  });
});
