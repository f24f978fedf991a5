/**
 * SIGKILL during a bulk load: the single-node server (`query-sandbox serve`, compiled) is killed while
 * bulks are in flight, started again on the same data directory, and every document whose bulk item
 * was acknowledged must be found by GET and by search.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const main = path.resolve('dist/src/cli/main.js');
const dir = mkdtempSync(path.join(tmpdir(), 'qs-crash-'));
const children: ChildProcess[] = [];
const TOKEN = 'crash-test-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };

afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen({ host: '127.0.0.1', port: 0 }, () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

async function startServer(port: number): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [
      main,
      'serve',
      '--port',
      String(port),
      '--data-dir',
      path.join(dir, 'data'),
      '--cache-dir',
      path.join(dir, 'cache'),
      '--max-docs',
      '5',
      '--threads',
      '1',
      '--log-level',
      'warn',
    ],
    { stdio: 'ignore', env: { ...process.env, QUERY_SANDBOX_ADMIN_TOKEN: TOKEN } },
  );
  children.push(child);
  const deadline = performance.now() + 15_000;
  for (;;) {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/`);
      await r.text();
      if (r.status === 200) return child;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`);
    if (performance.now() > deadline) throw new Error('the server did not start in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('crash recovery (SIGKILL during a bulk load)', () => {
  it('finds every acknowledged document after a restart, by GET and by search', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    let server = await startServer(port);
    const created = await fetch(`${base}/crash`, {
      method: 'PUT',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({ settings: { number_of_shards: 3, refresh_interval: '-1' } }),
    });
    expect(created.status).toBe(200);

    const acknowledged: string[] = [];
    const failures: string[] = [];
    let batch = 0;
    let killed = false;
    const loader = async (lane: number) => {
      while (!killed) {
        const ids = Array.from({ length: 25 }, (_, i) => `l${lane}-b${batch}-d${i}`);
        batch++;
        const body = ids.map((id) => `{"index":{"_id":"${id}"}}\n{"body":"crash load ${id}"}\n`).join('');
        try {
          const r = await fetch(`${base}/crash/_bulk`, {
            method: 'POST',
            headers: { ...AUTH, 'content-type': 'application/x-ndjson' },
            body,
          });
          const json = (await r.json()) as { items: { index: { _id: string; status: number } }[] };
          for (const item of json.items) if (item.index.status === 201) acknowledged.push(item.index._id);
        } catch (error) {
          // The connection died with the server: nothing of this bulk was acknowledged.
          if (!killed) failures.push(String((error as Error).cause ?? error));
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
    };
    const lanes = [loader(1), loader(2), loader(3)];
    const loadDeadline = performance.now() + 10_000;
    while (acknowledged.length < 600 && performance.now() < loadDeadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(failures).toEqual([]);
    expect(acknowledged.length).toBeGreaterThanOrEqual(600);
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill('SIGKILL');
    killed = true;
    await Promise.all(lanes);
    await exited;
    expect(server.signalCode).toBe('SIGKILL');

    server = await startServer(port);
    const missing: string[] = [];
    for (const id of acknowledged) {
      const r = await fetch(`${base}/crash/_doc/${id}`);
      const json = (await r.json()) as { found: boolean };
      if (!json.found) missing.push(id);
    }
    expect(missing).toEqual([]);
    const searched = await fetch(`${base}/crash/_search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: { match: { body: 'crash' } }, size: 0 }),
    });
    const total = ((await searched.json()) as { hits: { total: { value: number } } }).hits.total.value;
    expect(total).toBeGreaterThanOrEqual(acknowledged.length);
    // Spot-check by search that acknowledged ids are among the hits.
    const sample = acknowledged.slice(-5);
    for (const id of sample) {
      const r = await fetch(`${base}/crash/_search`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          query: { match: { body: { query: id.replaceAll('-', ' '), operator: 'and' } } },
          size: 5,
        }),
      });
      const hits = ((await r.json()) as { hits: { hits: { _id: string }[] } }).hits.hits.map((h) => h._id);
      expect(hits).toContain(id);
    }
    const stopped = new Promise((resolve) => server.once('exit', resolve));
    server.kill('SIGTERM');
    await stopped;
  }, 30_000);
});
