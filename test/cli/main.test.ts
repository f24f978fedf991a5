import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// The compiled command, as `npm start` runs it.
const main = path.resolve('dist/src/cli/main.js');

function run(...args: string[]) {
  return spawnSync(process.execPath, [main, ...args], { encoding: 'utf8', timeout: 20_000 });
}

describe('query-sandbox command', () => {
  it('is an executable that starts node with --single-threaded-gc, and reports a bad flag value by its range', () => {
    // The bin (`./dist/src/cli/main.js`, the npm bin link): its own line starts node, with per-isolate GC.
    expect(statSync(main).mode & 0o111).not.toBe(0);
    expect(readFileSync(main, 'utf8').split('\n')[0]).toBe('#!/usr/bin/env -S node --single-threaded-gc');
    const r = spawnSync(main, ['serve', '--spare-workers', '-1'], { encoding: 'utf8', timeout: 20_000 });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('--spare-workers must be an integer in 0..64; received "-1"');
  });

  it('refuses to start with an invalid sandbox file, naming the field, the value and the file', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'qs-cli-'));
    const file = path.join(dir, 'sandboxes.json');
    writeFileSync(
      file,
      JSON.stringify({
        sandboxes: [{ name: 'x', priority: 1, resourceConsumptionLimits: { cpu: { high: 1.5 } } }],
      }),
    );
    const r = run(
      'serve',
      '--sandboxes',
      file,
      '--port',
      '0',
      '--log-level',
      'silent',
      '--data-dir',
      path.join(dir, 'data'),
    );
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(
      'sandboxes[0].resourceConsumptionLimits.cpu.high must be a ratio in (0, 1]; received 1.5',
    );
    expect(r.stderr).toContain(file);
  });

  it.each([
    [
      '{"priorities": [',
      /--query-priority is not valid JSON \(.*at line 1 column \d+.*\); received ".*qp\.json"/,
    ],
    [
      '{"priorities": [{"priority": 1, "query_attributes": [{"regex": "(?=x)"}]}]}',
      /query_priority\.priorities\[0\]\.query_attributes\[0\]\.regex must be an RE2 regular expression.*\(in .*qp\.json\); received "\(\?=x\)"/,
    ],
  ])('refuses a bad --query-priority file in one line: %s', (content, message) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'qs-cli-'));
    const file = path.join(dir, 'qp.json');
    writeFileSync(file, content);
    const r = run(
      'serve',
      '--query-priority',
      file,
      '--port',
      '0',
      '--log-level',
      'silent',
      '--data-dir',
      path.join(dir, 'data'),
    );
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('refuses a sandbox file that is not JSON, with the position', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'qs-cli-'));
    const file = path.join(dir, 'broken.json');
    writeFileSync(file, '{"sandboxes": [');
    const r = run(
      'serve',
      '--sandboxes',
      file,
      '--port',
      '0',
      '--log-level',
      'silent',
      '--data-dir',
      path.join(dir, 'data'),
    );
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/must hold valid JSON .*line 1/);
  });

  it('refuses a port in use before loading anything, in one line without a stack', () => {
    const r = spawnSync(
      process.execPath,
      [
        '-e',
        `const s = require('net').createServer().listen(0, '127.0.0.1', () => {
           const port = s.address().port;
           const r = require('child_process').spawnSync(process.execPath, [${JSON.stringify(main)}, 'serve', '--port', String(port), '--data-dir', require('os').tmpdir() + '/qs-port-test'], { encoding: 'utf8' });
           process.stdout.write(JSON.stringify({ status: r.status, stderr: r.stderr, port }));
           s.close();
         });`,
      ],
      { encoding: 'utf8', timeout: 20_000 },
    );
    const out = JSON.parse(r.stdout) as { status: number; stderr: string; port: number };
    expect(out.status).toBe(1);
    expect(out.stderr.trim()).toBe(
      `query-sandbox: --port is already in use on 127.0.0.1; received ${out.port}`,
    );
  });

  // Larger or smaller, a process-wide flag replaces the cap the runtime asked for (1024 MiB).
  it.each([
    ['a larger', 4096, /workers report a heap limit of \d{4} MiB/],
    ['a smaller', 512, /workers report a heap limit of 560 MiB/],
  ])(
    'refuses to start when %s process-wide --max-old-space-size overrides the worker heap cap',
    (_, mb, report) => {
      const echo = path.resolve('test/fixtures/echo-engine.mjs');
      const dataDir = mkdtempSync(path.join(tmpdir(), 'qs-cli-'));
      const r = spawnSync(
        process.execPath,
        [main, 'serve', '--engine', echo, '--port', '0', '--data-dir', dataDir, '--log-level', 'silent'],
        {
          encoding: 'utf8',
          timeout: 20_000,
          env: { ...process.env, NODE_OPTIONS: `--max-old-space-size=${mb}` },
        },
      );
      expect(r.status).toBe(1);
      expect(r.stderr).toContain('options.workerHeapMb is overridden');
      expect(r.stderr).toMatch(report);
    },
  );

  it('prints usage for help and exits 2 for an unknown command', () => {
    expect(run('serve', '--help').stdout).toContain('query-sandbox serve [options]');
    expect(run('help').stdout).toContain('usage: query-sandbox <command>');
    const r = run('frobnicate');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('unknown command [frobnicate]');
  });
});
