// Bare piscina worker for the isolation benchmark: the same MiniSearch engine the runtime runs,
// loaded once per worker, with no accounting, no cancellation and piscina's own FIFO queue.
// workerData: { engineUrl, cacheDir, options }.
import { workerData } from 'node:worker_threads';

const engine = await import(workerData.engineUrl);
await engine.init({ cacheDir: workerData.cacheDir, options: workerData.options });
const context = { signal: new AbortController().signal, checkpoint() {}, taskId: 0 };

export default function search(request) {
  return engine.handle(request, context);
}
