import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { applyThreadWeight, currentThreadTid, threadNice } from '../../native-shim/index.js';

// Workers cannot load TypeScript: they import the tsc output (npm test builds first).
const shimUrl = pathToFileURL(`${process.cwd()}/dist/native-shim/index.js`).href;

/** A worker that reports its kernel tid and then idles until terminated. */
async function startIdle(): Promise<{ worker: Worker; tid: number }> {
  const code = `
    import { parentPort } from 'node:worker_threads';
    import { currentThreadTid } from ${JSON.stringify(shimUrl)};
    parentPort.postMessage({ tid: currentThreadTid() });
    parentPort.on('message', () => {});
  `;
  const worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(code)}`));
  const tid = await new Promise<number>((resolve) =>
    worker.once('message', (m: { tid: number }) => resolve(m.tid)),
  );
  return { worker, tid };
}

/** The scheduling policy of a thread of this process (/proc/<pid>/task/<tid>/stat field 41; 5 = SCHED_IDLE). */
function policyOf(tid: number): number {
  const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38]);
}

const hasChrt = (() => {
  try {
    execFileSync('chrt', ['--version'], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
})();

describe.runIf(process.platform === 'linux')('applyThreadWeight', () => {
  const workers: Worker[] = [];
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.terminate()));
  });

  it("raises one thread's nice and leaves the others, the main thread included, at theirs", async () => {
    const a = await startIdle();
    const b = await startIdle();
    workers.push(a.worker, b.worker);
    expect(applyThreadWeight(a.tid, 12)).toEqual({ applied: true, nice: 12, reason: undefined });
    expect(threadNice(a.tid)).toBe(12);
    expect(threadNice(b.tid)).toBe(0);
    expect(threadNice(currentThreadTid())).toBe(0);
  });

  it('never lowers nice: it reports that doing so needs CAP_SYS_NICE instead of trying', async () => {
    const a = await startIdle();
    workers.push(a.worker);
    applyThreadWeight(a.tid, 15);
    const lowered = applyThreadWeight(a.tid, 5);
    expect(lowered.applied).toBe(false);
    expect(lowered.nice).toBe(15);
    expect(lowered.reason).toContain('needs CAP_SYS_NICE');
    expect(threadNice(a.tid)).toBe(15);
  });

  it.runIf(hasChrt)('puts a thread in SCHED_IDLE', async () => {
    const a = await startIdle();
    workers.push(a.worker);
    expect(policyOf(a.tid)).toBe(0);
    expect(applyThreadWeight(a.tid, 'idle').applied).toBe(true);
    expect(policyOf(a.tid)).toBe(5);
  });

  it('reports a thread that does not exist instead of throwing', () => {
    const r = applyThreadWeight(0, 19);
    expect(r.applied).toBe(false);
    expect(r.reason).toBe('no kernel thread id (received 0)');
    expect(applyThreadWeight(2 ** 30, 19).applied).toBe(false);
  });
});
