/**
 * A `query-sandbox serve` process for benchmarks that drive the real server over HTTP: started as a
 * child on a free loopback port (it reports the port over the IPC channel once it listens), with a
 * known admin token, and stopped with SIGTERM (SIGKILL after 10 s).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
/** The admin token the child is given (`QUERY_SANDBOX_ADMIN_TOKEN`): writes and sandbox changes. */
export const BENCH_ADMIN_TOKEN = 'bench-admin-token-0123456789';

export interface ServerProcess {
  readonly url: string;
  readonly pid: number;
  readonly child: ChildProcess;
  /** SIGTERM, then SIGKILL after 10 s; resolves once the process is gone. */
  stop(): Promise<void>;
}

/**
 * Starts `serve --port 0 --data-dir <dataDir> ...args` and waits until it listens (at most
 * `startTimeoutMs`, default 180 s: the first start builds the index cache).
 * @throws Error when it exits or does not listen in time (the child is killed then).
 */
export async function startServer(
  dataDir: string,
  args: readonly string[],
  options: { readonly startTimeoutMs?: number; readonly logLevel?: string } = {},
): Promise<ServerProcess> {
  mkdirSync(dataDir, { recursive: true });
  const child = spawn(
    process.execPath,
    [MAIN, 'serve', '--port', '0', '--data-dir', dataDir, '--log-level', options.logLevel ?? 'warn', ...args],
    {
      env: { ...process.env, QUERY_SANDBOX_ADMIN_TOKEN: BENCH_ADMIN_TOKEN },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await gone;
    clearTimeout(timer);
  };
  try {
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the server did not listen within ${options.startTimeoutMs ?? 180_000} ms`)),
        options.startTimeoutMs ?? 180_000,
      );
      child.on('message', (message: { type?: unknown; port?: unknown }) => {
        if (message?.type === 'query-sandbox:listening' && typeof message.port === 'number') {
          clearTimeout(timer);
          resolve(message.port);
        }
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`the server exited during start-up (code ${code}, signal ${signal})`));
      });
    });
    return { url: `http://127.0.0.1:${port}`, pid: child.pid!, child, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A data directory under `.query-sandbox/` of the working directory (the project root under npm). */
export function benchDataDir(name: string): string {
  return path.resolve('.query-sandbox', name);
}

/** The outcome of one search over HTTP. */
export interface SearchOutcome {
  /** HTTP status; 0 when the client gave up (timeout) or the connection failed. */
  readonly status: number;
  /** `error.rejection_reason` (or `error.type`) of an error answer; `client_timeout` / `connection` for status 0. */
  readonly reason: string | undefined;
  /** From the intended send time to the answer, ms. */
  readonly latencyMs: number;
}

/**
 * POSTs a search and reads the whole answer. `intendedAt` (performance.now() ms) is when the open-loop
 * schedule meant to send it; `timeoutMs` is the client's own time-out (it aborts the request, which
 * closes its connection).
 */
export async function searchOverHttp(
  url: string,
  index: string,
  user: string,
  body: unknown,
  intendedAt: number,
  timeoutMs: number,
): Promise<SearchOutcome> {
  try {
    const r = await fetch(`${url}/${index}/_search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user': user },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await r.text();
    let reason: string | undefined;
    if (r.status !== 200) {
      try {
        const e = (JSON.parse(text) as { error?: { rejection_reason?: string; type?: string } }).error;
        reason = e?.rejection_reason ?? e?.type;
      } catch {
        reason = 'unparsable';
      }
    }
    return { status: r.status, reason, latencyMs: performance.now() - intendedAt };
  } catch (error) {
    const name = (error as { name?: string }).name;
    return {
      status: 0,
      reason: name === 'TimeoutError' || name === 'AbortError' ? 'client_timeout' : 'connection',
      latencyMs: performance.now() - intendedAt,
    };
  }
}
