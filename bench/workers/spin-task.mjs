// The same work for both sides of the overhead benchmark: return the input after spinning
// `spinMs` of wall time (0: return at once).
function spin(ms) {
  if (!ms) return;
  const end = performance.now() + ms;
  while (performance.now() < end) {
    /* busy */
  }
}

/** Bare piscina handler. */
export default function bareTask(task) {
  spin(task.spinMs);
  return task.n;
}

/** query-sandbox engine handler. */
export function handle(request) {
  spin(request.body.spinMs);
  return request.body.n;
}
