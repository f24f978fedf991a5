/**
 * Per-thread CPU time for Node.js threads, in the spirit of Java's `ThreadMXBean`, without a compiled
 * addon.
 *
 * Sources, in order of preference:
 * - `process.threadCpuUsage()` (Node >= 22.19 / 23.9) for the calling thread;
 * - Linux `schedstat`: the first field of `/proc/thread-self/schedstat` (calling thread) or
 *   `/proc/self/task/<tid>/schedstat` (any thread of this process) is the thread's CPU time in ns
 *   (Documentation/scheduler/sched-stats.rst). Files are read through a kept file descriptor with a
 *   positional read at offset 0, which regenerates the figure on every read (about 2 µs) and keeps
 *   working while the thread is busy in synchronous code. After the thread exits the kept fd fails
 *   (ESRCH), so a reused tid is never mistaken for the old thread.
 *
 * Where neither exists `isThreadCpuTimeSupported()` is false and the getters throw: this module never
 * returns a process-wide figure as if it were a thread's.
 */
import fs from 'node:fs';

type ThreadCpuUsageFn = () => { user: number; system: number };

const threadCpuUsage: ThreadCpuUsageFn | undefined = (
  process as unknown as { threadCpuUsage?: ThreadCpuUsageFn }
).threadCpuUsage;

/** Where per-thread CPU figures come from on this machine. */
export type ThreadCpuSource = 'threadCpuUsage' | 'schedstat' | 'none';

export interface ThreadCpuSupport {
  /** True when both the calling thread's and other threads' CPU time can be read. */
  readonly available: boolean;
  /** Source for the calling thread. */
  readonly currentThreadSource: ThreadCpuSource;
  /** Source for other threads read by tid (only `schedstat` exists for that). */
  readonly otherThreadSource: 'schedstat' | 'none';
  /** Why a source is missing, when one is. */
  readonly reason: string | undefined;
}

/** Thrown by the getters where per-thread CPU time cannot be had. */
export class ThreadCpuUnavailableError extends Error {
  constructor(reason: string) {
    super(`per-thread CPU time is unavailable: ${reason}`);
    this.name = 'ThreadCpuUnavailableError';
  }
}

const SCHEDSTAT_BYTES = 96;
const scratch = Buffer.allocUnsafe(SCHEDSTAT_BYTES);

/** Parses the first decimal field of a schedstat read into `scratch`; NaN when malformed. */
function parseFirstField(length: number): number {
  let value = 0;
  let i = 0;
  for (; i < length; i++) {
    const c = scratch[i]!;
    if (c < 48 || c > 57) break;
    value = value * 10 + (c - 48);
  }
  return i === 0 ? Number.NaN : value;
}

function readSchedstatNs(fd: number): number {
  const n = fs.readSync(fd, scratch, 0, SCHEDSTAT_BYTES, 0);
  return parseFirstField(n);
}

let support: ThreadCpuSupport | undefined;

/** Reports once (cached) which sources work here. Never throws. */
export function threadCpuSupport(): ThreadCpuSupport {
  if (support !== undefined) return support;
  let schedstatOk = false;
  let reason: string | undefined;
  try {
    const fd = fs.openSync('/proc/thread-self/schedstat', 'r');
    try {
      schedstatOk = Number.isFinite(readSchedstatNs(fd));
      if (!schedstatOk) reason = '/proc/thread-self/schedstat is malformed';
    } finally {
      fs.closeSync(fd);
    }
  } catch (error) {
    reason = `/proc/thread-self/schedstat cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`;
  }
  const currentThreadSource: ThreadCpuSource = threadCpuUsage
    ? 'threadCpuUsage'
    : schedstatOk
      ? 'schedstat'
      : 'none';
  support = Object.freeze({
    available: currentThreadSource !== 'none' && schedstatOk,
    currentThreadSource,
    otherThreadSource: schedstatOk ? 'schedstat' : 'none',
    reason,
  });
  return support;
}

let selfFd: number | undefined;

/**
 * CPU time of the calling thread in nanoseconds (user + system), monotonic for the thread's life.
 * @throws ThreadCpuUnavailableError where no per-thread source exists.
 */
export function currentThreadCpuTimeNs(): number {
  if (threadCpuUsage) {
    const { user, system } = threadCpuUsage();
    return (user + system) * 1000;
  }
  if (selfFd === undefined) {
    const s = threadCpuSupport();
    if (s.currentThreadSource === 'none') throw new ThreadCpuUnavailableError(s.reason ?? 'no source');
    // /proc/thread-self resolves when opened, so this fd stays bound to the calling thread.
    selfFd = fs.openSync('/proc/thread-self/schedstat', 'r');
  }
  return readSchedstatNs(selfFd);
}

/**
 * Kernel thread id of the calling thread (`readlink /proc/thread-self` -> `<pid>/task/<tid>`).
 * @throws ThreadCpuUnavailableError where /proc is missing.
 */
export function currentThreadTid(): number {
  let link: string;
  try {
    link = fs.readlinkSync('/proc/thread-self');
  } catch (error) {
    throw new ThreadCpuUnavailableError(
      `/proc/thread-self cannot be read (${(error as NodeJS.ErrnoException).code})`,
    );
  }
  const tid = Number(link.slice(link.lastIndexOf('/') + 1));
  if (!Number.isInteger(tid) || tid <= 0)
    throw new ThreadCpuUnavailableError(`unexpected /proc/thread-self: ${link}`);
  return tid;
}

/**
 * Reads other threads' CPU time by kernel tid from the main thread (or any thread), keeping one fd
 * per tid. Works while the target thread spins in synchronous code. Not thread-safe across workers:
 * make one per thread that reads.
 */
export class ThreadCpuReader {
  readonly #fds = new Map<number, number>();

  /**
   * CPU time in ns of thread `tid` of this process, or `undefined` when the thread no longer exists
   * (its fd is then closed and forgotten).
   * @throws ThreadCpuUnavailableError where schedstat is unavailable.
   */
  cpuTimeNs(tid: number): number | undefined {
    let fd = this.#fds.get(tid);
    try {
      if (fd === undefined) {
        if (threadCpuSupport().otherThreadSource === 'none') {
          throw new ThreadCpuUnavailableError(threadCpuSupport().reason ?? 'no source');
        }
        fd = fs.openSync(`/proc/self/task/${tid}/schedstat`, 'r');
        this.#fds.set(tid, fd);
      }
      const ns = readSchedstatNs(fd);
      return Number.isFinite(ns) ? ns : undefined;
    } catch (error) {
      if (error instanceof ThreadCpuUnavailableError) throw error;
      this.forget(tid);
      return undefined;
    }
  }

  /** Number of kept fds. */
  get size(): number {
    return this.#fds.size;
  }

  /** Closes the fd kept for `tid`, if any. */
  forget(tid: number): void {
    const fd = this.#fds.get(tid);
    if (fd === undefined) return;
    this.#fds.delete(tid);
    try {
      fs.closeSync(fd);
    } catch {
      // already closed: nothing to release
    }
  }

  /** Closes every kept fd. */
  close(): void {
    for (const tid of [...this.#fds.keys()]) this.forget(tid);
  }
}
