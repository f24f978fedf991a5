// Allocation-heavy work for the GC blind-spot benchmark: builds and drops `rounds` arrays of objects,
// returning its own thread's CPU for the work (ns, from schedstat).
import fs from 'node:fs';

let fd;
function threadCpuNs() {
  fd ??= fs.openSync('/proc/thread-self/schedstat', 'r');
  const buf = Buffer.alloc(64);
  const n = fs.readSync(fd, buf, 0, 64, 0);
  return Number(buf.toString('latin1', 0, n).split(' ')[0]);
}

export function handle(request) {
  const start = threadCpuNs();
  let keep = [];
  let sum = 0;
  for (let r = 0; r < (request.body.rounds ?? 40); r++) {
    const batch = [];
    for (let i = 0; i < 20_000; i++) batch.push({ i, s: `item-${i}-${r}`, a: [i, r, i * r] });
    keep.push(batch);
    if (keep.length > 8) keep = keep.slice(4); // old generations die, some survive a while
    sum += batch.length;
  }
  return { sum, threadCpuNs: threadCpuNs() - start };
}
