import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import * as engine from '../../src/engine/minisearch-engine.js';

const cacheDir = mkdtempSync(join(tmpdir(), 'qs-engine-full-'));
afterAll(() => rmSync(cacheDir, { recursive: true, force: true }));

describe('minisearch engine on the full corpus', () => {
  it('indexes all 6,046 mails in five indices and answers queries', { timeout: 60_000 }, () => {
    const description = engine.prepare({ cacheDir, options: {}, log: () => {} });
    expect(description.indices).toEqual(['easy-ham-1', 'easy-ham-2', 'hard-ham-1', 'spam-1', 'spam-2']);
    engine.init({ cacheDir, options: {} });
    const context = {
      signal: new AbortController().signal,
      cancelled: false,
      throwIfCancelled: () => {},
      checkpoint: () => {},
      taskId: 1,
    };
    const counts = description.indices!.map(
      (index) => engine.handle({ indices: [index], body: { size: 0 } }, context).hits.total!.value,
    );
    expect(counts).toEqual([2500, 1400, 250, 500, 1396]);
    const money = engine.handle(
      { indices: description.indices!, body: { query: { match: { body: 'money' } } } },
      context,
    );
    expect(money.hits.total!.value).toBeGreaterThan(500);
    expect(money.hits.hits).toHaveLength(10);
    // 28 mails have no parseable Date header; 1,655 are dated August 2002 (UTC).
    const total = (range: Record<string, unknown>) =>
      engine.handle(
        { indices: description.indices!, body: { query: { range: { date: range } }, size: 0 } },
        context,
      ).hits.total!.value;
    expect(total({ gte: -8.64e15 })).toBe(6046 - 28);
    expect(total({ gte: '2002-08-01', lt: '2002-09-01' })).toBe(1655);
  });
});
