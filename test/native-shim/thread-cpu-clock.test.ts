import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import {
  currentThreadCpuTimeNs,
  currentThreadTid,
  ThreadCpuReader,
  threadCpuSupport,
} from '../../native-shim/index.js';

// Workers cannot load TypeScript: they import the tsc output (npm test builds first).
const shimUrl = pathToFileURL(`${process.cwd()}/dist/native-shim/index.js`).href;

/** A worker that reports its tid, then burns `burnMs` of its own thread CPU (or spins forever when 0). */
function startBurner(burnMs: number): { worker: Worker; tid: Promise<number>; done: Promise<number> } {
  const code = `
    import { parentPort } from 'node:worker_threads';
    import { currentThreadCpuTimeNs, currentThreadTid } from ${JSON.stringify(shimUrl)};
    parentPort.postMessage({ tid: currentThreadTid() });
    // 'on', not 'once': the listener keeps the worker alive after the burn, so the main thread can
    // still read its clock (an exited thread's schedstat fails).
    parentPort.on('message', () => {
      const start = currentThreadCpuTimeNs();
      let x = 0;
      for (;;) {
        for (let i = 0; i < 10000; i++) x += Math.sqrt(i + x);
        if (${burnMs} > 0 && currentThreadCpuTimeNs() - start >= ${burnMs} * 1e6) break;
      }
      parentPort.postMessage({ burnedNs: currentThreadCpuTimeNs() - start, x: x > 0 });
    });
  `;
  const worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(code)}`));
  let resolveTid!: (tid: number) => void;
  let resolveDone!: (ns: number) => void;
  const tid = new Promise<number>((r) => (resolveTid = r));
  const done = new Promise<number>((r) => (resolveDone = r));
  worker.on('message', (m: { tid?: number; burnedNs?: number }) => {
    if (m.tid !== undefined) resolveTid(m.tid);
    if (m.burnedNs !== undefined) resolveDone(m.burnedNs);
  });
  return { worker, tid, done };
}

const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.terminate()));
});

describe('thread CPU clock', () => {
  it('reports per-thread CPU as available on Linux with /proc', () => {
    const support = threadCpuSupport();
    expect(support.available).toBe(true);
    expect(support.otherThreadSource).toBe('schedstat');
    expect(['threadCpuUsage', 'schedstat']).toContain(support.currentThreadSource);
  });

  it("advances the calling thread's clock by the CPU it burns, never more than wall time or the process's", () => {
    // Burn until the thread's own clock shows 30 ms (on a busy machine that takes longer than 30 ms of
    // wall time), with a 10 s cap so a clock that never moves fails instead of hanging.
    const before = currentThreadCpuTimeNs();
    const processBefore = process.cpuUsage();
    const wallStart = process.hrtime.bigint();
    let x = 0;
    let burnedMs = 0;
    while (burnedMs < 30 && Number(process.hrtime.bigint() - wallStart) < 10e9) {
      for (let i = 0; i < 10_000; i++) x += Math.sqrt(x + 1);
      burnedMs = (currentThreadCpuTimeNs() - before) / 1e6;
    }
    const wallMs = Number(process.hrtime.bigint() - wallStart) / 1e6;
    const processCpu = process.cpuUsage(processBefore);
    const processMs = (processCpu.user + processCpu.system) / 1000;
    expect(x).toBeGreaterThan(0);
    expect(burnedMs).toBeGreaterThanOrEqual(30);
    // schedstat and hrtime come from different clocks: allow one 4 ms scheduler tick of skew.
    expect(burnedMs).toBeLessThan(wallMs + 5);
    expect(burnedMs).toBeLessThan(processMs + 5);
  });

  it('gives each thread its own kernel tid', async () => {
    const w = startBurner(1);
    workers.push(w.worker);
    const tid = await w.tid;
    expect(tid).toBeGreaterThan(0);
    expect(tid).not.toBe(currentThreadTid());
  });

  it("measures a busy worker's CPU from the main thread within 10 % while another thread is also busy", async () => {
    const target = startBurner(200);
    const other = startBurner(0); // spins until terminated: a process-wide clock would count it too
    workers.push(target.worker, other.worker);
    const [tid] = await Promise.all([target.tid, other.tid]);
    const reader = new ThreadCpuReader();
    const processBefore = process.cpuUsage();
    const threadBefore = reader.cpuTimeNs(tid)!;
    other.worker.postMessage('go');
    target.worker.postMessage('go');
    // Sample while it runs: reading must work while the worker is stuck in synchronous code.
    const midway: number[] = [];
    const timer = setInterval(() => midway.push(reader.cpuTimeNs(tid) ?? -1), 20);
    const ownNs = await target.done;
    clearInterval(timer);
    const measuredNs = reader.cpuTimeNs(tid)! - threadBefore;
    const processDelta = process.cpuUsage(processBefore);
    const processNs = (processDelta.user + processDelta.system) * 1000;

    expect(ownNs / 1e6).toBeGreaterThanOrEqual(200);
    expect(Math.abs(measuredNs - ownNs) / ownNs).toBeLessThan(0.1);
    expect(Math.abs(measuredNs / 1e6 - 200) / 200).toBeLessThan(0.1);
    // The process-wide figure includes the other busy thread, so it would fail the 10 % bound.
    expect(processNs / measuredNs).toBeGreaterThan(1.5);
    expect(midway.filter((v) => v > threadBefore).length).toBeGreaterThan(0);
    reader.close();
  });

  it('answers undefined, not a reused figure, once the thread has exited', async () => {
    const w = startBurner(1);
    const tid = await w.tid;
    const reader = new ThreadCpuReader();
    expect(reader.cpuTimeNs(tid)).toBeGreaterThan(0);
    await w.worker.terminate();
    expect(reader.cpuTimeNs(tid)).toBeUndefined();
    expect(reader.size).toBe(0);
    reader.close();
  });
});
