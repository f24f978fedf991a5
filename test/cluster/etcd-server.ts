/**
 * A real etcd for tests: Debian's `etcd` binary on free loopback ports with a temp data dir, killed
 * afterwards (and by its guard if the test process dies). Without the binary, suites wrapped in
 * `describeEtcd` are skipped with the reason on stderr, except under CI (`process.env.CI`), where a
 * missing etcd fails them: `.ci/run` installs it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe } from 'vitest';
import {
  ETCD_INSTALL_HINT,
  findEtcdBinary,
  type LocalEtcd,
  startLocalEtcd,
} from '../../src/cluster/local-etcd.js';
import { portsFree } from '../../src/cli/port-probe.js';

const binary = findEtcdBinary();
/** Why the etcd tests do not run here, or undefined when they do. */
export const etcdSkipReason =
  binary === undefined && (process.env['CI'] ?? '') === ''
    ? `etcd tests skipped: no etcd binary on PATH (${ETCD_INSTALL_HINT}); under CI they fail instead`
    : undefined;
if (etcdSkipReason !== undefined) process.stderr.write(`${etcdSkipReason}\n`);

/** `describe` that needs a real etcd (see module doc). */
export const describeEtcd: typeof describe = describe.skipIf(etcdSkipReason !== undefined) as typeof describe;

/** A test etcd that can be stopped and started again on the same ports and data. */
export interface TestEtcd {
  readonly endpoints: readonly string[];
  readonly server: LocalEtcd;
  /** Stops it (kept data). */
  stop(): Promise<void>;
  /** Starts it again on the same ports and data. */
  start(): Promise<void>;
  /** Stops it and removes its data. */
  destroy(): Promise<void>;
}

async function freePorts(count: number): Promise<number> {
  for (;;) {
    const base = 20_000 + Math.floor(Math.random() * 40_000);
    if (await portsFree(base, count)) return base;
  }
}

/** Starts a test etcd (see module doc). */
export async function startTestEtcd(): Promise<TestEtcd> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'qs-etcd-'));
  const base = await freePorts(2);
  const launch = () =>
    startLocalEtcd({ dataDir: path.join(dataDir, 'member'), clientPort: base, peerPort: base + 1 });
  let server = await launch();
  const handle: TestEtcd = {
    endpoints: server.endpoints,
    get server() {
      return server;
    },
    stop: () => server.stop(),
    start: async () => {
      server = await launch();
    },
    destroy: async () => {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return handle;
}
