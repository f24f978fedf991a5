/**
 * A local etcd server for a loopback cluster, its tests and benchmarks: Debian's `etcd` binary
 * (`apt-get install etcd-server`, etcd 3.4) on loopback ports, its data under a directory of the
 * caller's. One member, no TLS, no auth: it listens on loopback only.
 *
 * The server runs under a small `sh` guard that holds a pipe from this process on its standard input:
 * when this process goes away, even by SIGKILL, the pipe closes and the guard stops etcd, so no etcd
 * is left behind (the data nodes watch their IPC channel to the launcher the same way).
 *
 * Flags given to etcd (etcd 3.4 names): `--name`, `--data-dir`, `--listen-client-urls`,
 * `--advertise-client-urls`, `--listen-peer-urls`, `--initial-advertise-peer-urls`,
 * `--initial-cluster`, `--initial-cluster-state new`, `--log-level warn`, `--logger zap`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, mkdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { Socket } from 'node:net';

/** Where `etcd` is on `PATH` (or `QUERY_SANDBOX_ETCD_BIN`), or undefined when it is not installed. */
export function findEtcdBinary(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const explicit = env['QUERY_SANDBOX_ETCD_BIN'];
  const candidates =
    explicit !== undefined && explicit !== ''
      ? [explicit]
      : [...(env['PATH'] ?? '').split(delimiter).filter((d) => d !== ''), '/usr/bin', '/usr/local/bin'].map(
          (dir) => join(dir, 'etcd'),
        );
  for (const file of candidates) {
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not there
    }
  }
  return undefined;
}

/** The one line that tells a user how to get etcd. */
export const ETCD_INSTALL_HINT =
  'install it with `apt-get install etcd-server` (Debian/Ubuntu: the `etcd` binary, 3.4), or pass --etcd <endpoints> of a running one';

export interface LocalEtcdOptions {
  /** The member's data directory (created). */
  readonly dataDir: string;
  /** Loopback address to listen on. @default '127.0.0.1' */
  readonly host?: string;
  /** Client port (the endpoints' port). */
  readonly clientPort: number;
  /** Peer port (raft; one member only, but etcd needs one). */
  readonly peerPort: number;
  /** The binary. @default findEtcdBinary() */
  readonly binary?: string;
  /** How long to wait for the server to accept connections, ms. @default 15000 */
  readonly startTimeoutMs?: number;
  /** Lines of etcd's output, for the caller's log. @default dropped */
  readonly onOutput?: (line: string) => void;
}

/** A started etcd. */
export interface LocalEtcd {
  /** `http://host:clientPort`, for `--etcd` and the client. */
  readonly endpoints: readonly string[];
  readonly pid: number;
  /** Stops it (SIGTERM, SIGKILL after 5 s) and waits for it. Idempotent. */
  stop(): Promise<void>;
  /** Settles when it exits, for whatever reason. */
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
}

/** Connects to `host:port` once; true when something accepts. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.connect(port, host);
  });
}

/**
 * Starts etcd and resolves once its client port accepts connections.
 * @throws Error naming the binary when it is missing (with `ETCD_INSTALL_HINT`), or when etcd exits
 *   or does not listen within `startTimeoutMs` (with its last output line).
 */
export async function startLocalEtcd(options: LocalEtcdOptions): Promise<LocalEtcd> {
  const binary = options.binary ?? findEtcdBinary();
  if (binary === undefined) throw new Error(`etcd is not installed: ${ETCD_INSTALL_HINT}`);
  const host = options.host ?? '127.0.0.1';
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const client = `http://${host}:${options.clientPort}`;
  const peer = `http://${host}:${options.peerPort}`;
  const args = [
    '--name',
    'qs-etcd',
    '--data-dir',
    options.dataDir,
    '--listen-client-urls',
    client,
    '--advertise-client-urls',
    client,
    '--listen-peer-urls',
    peer,
    '--initial-advertise-peer-urls',
    peer,
    '--initial-cluster',
    `qs-etcd=${peer}`,
    '--initial-cluster-state',
    'new',
    '--logger',
    'zap',
    '--log-level',
    'warn',
  ];
  // The guard: etcd in the background; when our pipe on stdin closes (we exited), or on TERM, stop it.
  const guard =
    'exec 3<&0; "$0" "$@" <&- 3<&- & p=$!; ' +
    "trap 'kill -TERM $p 2>/dev/null; wait $p; exit 0' TERM INT; " +
    '(read _ignored <&3; kill -TERM $p 2>/dev/null) & w=$!; exec 3<&-; ' +
    'wait $p; s=$?; kill $w 2>/dev/null; exit $s';
  const child: ChildProcess = spawn('sh', ['-c', guard, binary, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let last = '';
  const take = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line.trim() === '') continue;
      last = line;
      options.onOutput?.(line);
    }
  };
  child.stdout?.on('data', take);
  child.stderr?.on('data', take);
  let exitedNow = false;
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      exitedNow = true;
      resolve({ code, signal });
    });
  });
  const stop = async (): Promise<void> => {
    if (exitedNow) return;
    const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.kill('SIGTERM');
    await exited;
    clearTimeout(kill);
  };
  const deadline = performance.now() + (options.startTimeoutMs ?? 15_000);
  for (;;) {
    if (exitedNow) {
      const { code, signal } = await exited;
      throw new Error(
        `etcd (${binary}) exited during start-up (code ${code}, signal ${signal}): ${last || '(no output)'}`,
      );
    }
    if (await accepts(host, options.clientPort)) break;
    if (performance.now() > deadline) {
      await stop();
      throw new Error(
        `etcd (${binary}) did not listen on ${client} within ${options.startTimeoutMs ?? 15_000} ms: ${last || '(no output)'}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { endpoints: [client], pid: child.pid ?? -1, stop, exited };
}
