/**
 * The number of cores this process may use: the cgroup CPU quota when one is set (cgroup v2
 * `cpu.max`, v1 `cpu.cfs_quota_us / cpu.cfs_period_us`), else `os.availableParallelism()`.
 * A fractional quota is kept as a fraction (1.5 cores) since usage ratios divide by it.
 */
import fs from 'node:fs';
import os from 'node:os';

function readQuota(): number | undefined {
  try {
    const [quota, period] = fs.readFileSync('/sys/fs/cgroup/cpu.max', 'utf8').trim().split(/\s+/);
    if (quota !== undefined && quota !== 'max' && period !== undefined) {
      const cores = Number(quota) / Number(period);
      if (Number.isFinite(cores) && cores > 0) return cores;
    }
    return undefined;
  } catch {
    // no cgroup v2 file: try v1
  }
  try {
    const quota = Number(fs.readFileSync('/sys/fs/cgroup/cpu/cpu.cfs_quota_us', 'utf8'));
    const period = Number(fs.readFileSync('/sys/fs/cgroup/cpu/cpu.cfs_period_us', 'utf8'));
    if (quota > 0 && period > 0) return quota / period;
  } catch {
    // no cgroup v1 file either
  }
  return undefined;
}

/** Cores available to this process (see module doc), at least 1e-3, never more than the parallelism. */
export function availableCores(): number {
  const parallelism = os.availableParallelism();
  const quota = readQuota();
  return quota === undefined ? parallelism : Math.max(1e-3, Math.min(parallelism, quota));
}
