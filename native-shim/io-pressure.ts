/**
 * IO figures for node usage, from Linux pressure-stall information (PSI) and `/proc/self/io`: the only
 * place the admission code's IO figures touch `/proc` or cgroups.
 *
 * - PSI (`Documentation/accounting/psi.rst`): the `some` line's `avg10` is the share of the last 10 s
 *   in which at least one task stalled on IO, in percent. The cgroup v2 file
 *   (`/sys/fs/cgroup/io.pressure`, this container's own tasks) is preferred over the system-wide
 *   `/proc/pressure/io`. Read about every 5 s; a read costs a few µs.
 * - `/proc/self/io` (`Documentation/filesystems/proc.rst`): `read_bytes` + `write_bytes` are the bytes
 *   this process caused to be fetched from or sent to the storage layer (not `rchar`/`wchar`, which
 *   count page-cache hits too). A byte count is not a usage ratio: it needs a capacity to divide by.
 *
 * Every function here returns `undefined` rather than throwing where a file is missing or malformed.
 */
import fs from 'node:fs';

/** Where an IO pressure figure came from. */
export type IoPressureSource = 'psi-cgroup' | 'psi-system';

/** PSI files, most specific first. */
export const IO_PRESSURE_PATHS: readonly { readonly path: string; readonly source: IoPressureSource }[] =
  Object.freeze([
    Object.freeze({ path: '/sys/fs/cgroup/io.pressure', source: 'psi-cgroup' as const }),
    Object.freeze({ path: '/proc/pressure/io', source: 'psi-system' as const }),
  ]);

/** The process's own IO accounting file. */
export const PROC_SELF_IO_PATH = '/proc/self/io';

/**
 * The `some avg10` figure of a PSI file's text as a ratio in 0..1 (`some avg10=12.50 ...` -> 0.125);
 * `undefined` when the line or field is missing or not a number in 0..100.
 */
export function parsePressureSomeAvg10(text: string): number | undefined {
  const match = /^some\s+avg10=(\d{1,3}(?:\.\d+)?)\b/m.exec(text);
  if (match === null) return undefined;
  const percent = Number(match[1]);
  return percent >= 0 && percent <= 100 ? percent / 100 : undefined;
}

/**
 * `read_bytes + write_bytes` from the text of `/proc/<pid>/io`, in bytes; `undefined` when either
 * field is missing.
 */
export function parseProcIoBytes(text: string): number | undefined {
  const read = /^read_bytes:\s*(\d+)$/m.exec(text);
  const write = /^write_bytes:\s*(\d+)$/m.exec(text);
  if (read === null || write === null) return undefined;
  return Number(read[1]) + Number(write[1]);
}

function readText(path: string): string | undefined {
  try {
    return fs.readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** The first PSI file among `paths` that reads and parses, or `undefined` when none does. */
export function findIoPressureSource(
  paths: readonly { readonly path: string; readonly source: IoPressureSource }[] = IO_PRESSURE_PATHS,
): { readonly path: string; readonly source: IoPressureSource } | undefined {
  for (const candidate of paths) {
    const text = readText(candidate.path);
    if (text !== undefined && parsePressureSomeAvg10(text) !== undefined) return candidate;
  }
  return undefined;
}

/** IO pressure (`some avg10`) as a ratio in 0..1 from the PSI file at `path`; `undefined` if unreadable. */
export function readIoPressure(path: string): number | undefined {
  const text = readText(path);
  return text === undefined ? undefined : parsePressureSomeAvg10(text);
}

/** This process's storage-layer bytes read + written so far (`/proc/self/io`); `undefined` if unreadable. */
export function readProcessIoBytes(path: string = PROC_SELF_IO_PATH): number | undefined {
  const text = readText(path);
  return text === undefined ? undefined : parseProcIoBytes(text);
}
