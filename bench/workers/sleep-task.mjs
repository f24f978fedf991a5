// The same work for both sides of the memory benchmark: wait `sleepMs` (0: return at once).
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Bare piscina handler. */
export default async function sleepTask(task) {
  if (task.sleepMs) await sleep(task.sleepMs);
  return task.n;
}

/** query-sandbox engine handler. */
export async function handle(request) {
  if (request.body.sleepMs) await sleep(request.body.sleepMs);
  return request.body.n;
}
