import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parsePressureSomeAvg10, parseProcIoBytes } from '../../native-shim/index.js';
import { createIoUsageSampler } from '../../src/tracking/io-usage-sampler.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'io-usage-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const p = path.join(dir, name);
  fs.writeFileSync(p, text);
  return p;
}

const PSI =
  'some avg10=12.50 avg60=3.00 avg300=1.00 total=67421042\nfull avg10=1.00 avg60=0.46 avg300=1.15 total=5538\n';
const PROC_IO =
  'rchar: 6976\nwchar: 0\nsyscr: 10\nsyscw: 0\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n';

describe('io pressure parsing (native-shim)', () => {
  it('reads some avg10 as a ratio', () => {
    expect(parsePressureSomeAvg10(PSI)).toBe(0.125);
    expect(parsePressureSomeAvg10('some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n')).toBe(0);
  });

  it('returns undefined for text without a usable some line', () => {
    expect(parsePressureSomeAvg10('')).toBeUndefined();
    expect(parsePressureSomeAvg10('full avg10=1.00 avg60=0 avg300=0 total=0')).toBeUndefined();
    expect(parsePressureSomeAvg10('some avg10=abc')).toBeUndefined();
    expect(parsePressureSomeAvg10('some avg10=250.00 avg60=0')).toBeUndefined();
  });

  it('adds read_bytes and write_bytes of /proc/<pid>/io', () => {
    expect(parseProcIoBytes(PROC_IO)).toBe(12_288);
    expect(parseProcIoBytes('rchar: 1\n')).toBeUndefined();
  });
});

describe('createIoUsageSampler', () => {
  it('prefers the first PSI file that parses', () => {
    const sampler = createIoUsageSampler({
      pressurePaths: [
        { path: path.join(dir, 'missing'), source: 'psi-cgroup' },
        { path: file('io.pressure', PSI), source: 'psi-system' },
      ],
    });
    expect(sampler.source).toBe('psi-system');
    expect(sampler.sample()).toBe(0.125);
  });

  it('uses the /proc/self/io byte rate over the configured capacity when PSI is missing', () => {
    const procIo = file('proc-io', PROC_IO);
    let nowMs = 0;
    const sampler = createIoUsageSampler({
      pressurePaths: [],
      procIoPath: procIo,
      capacityBytesPerSec: 100_000,
      monotonicMs: () => nowMs,
    });
    expect(sampler.source).toBe('proc-io');
    expect(sampler.sample()).toBeUndefined(); // first read: no rate yet
    nowMs += 500;
    fs.writeFileSync(procIo, PROC_IO.replace('write_bytes: 8192', 'write_bytes: 33192')); // +25 000 bytes
    expect(sampler.sample()).toBeCloseTo(0.5, 12); // 50 000 B/s of 100 000
    nowMs += 100;
    fs.writeFileSync(procIo, PROC_IO.replace('write_bytes: 8192', 'write_bytes: 1033192'));
    expect(sampler.sample()).toBe(1); // clamped
  });

  it("says 'none' without PSI and without a capacity, rather than inventing a figure", () => {
    const sampler = createIoUsageSampler({ pressurePaths: [], procIoPath: file('proc-io-2', PROC_IO) });
    expect(sampler.source).toBe('none');
    expect(sampler.sample()).toBeUndefined();
  });
});
