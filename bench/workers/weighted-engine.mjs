// Bare piscina worker with a scheduling weight, for the lane-weight benchmark: the same MiniSearch
// engine the runtime runs, no accounting; at start it gives its own kernel thread the weight asked
// for (a nice value or 'idle', through the native shim) before it loads the engine.
// workerData: { engineUrl, shimUrl, cacheDir, options, weight }.
import { workerData } from 'node:worker_threads';

const shim = await import(workerData.shimUrl);
const tid = shim.currentThreadTid();
const weight = shim.applyThreadWeight(tid, workerData.weight);
if (!weight.applied) throw new Error(`weight ${workerData.weight} not applied: ${weight.reason}`);
const engine = await import(workerData.engineUrl);
await engine.init({ cacheDir: workerData.cacheDir, options: workerData.options });
const context = { signal: new AbortController().signal, checkpoint() {}, taskId: 0 };

export default function search(request) {
  return engine.handle(request, context);
}
