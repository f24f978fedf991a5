import { describe, expect, it } from 'vitest';
import { parseDemoOptions } from '../../src/cli/demo.js';
import { readNodeSecrets } from '../../src/cli/node-secrets.js';
import { isLoopbackHost, parseServeOptions } from '../../src/cli/serve-options.js';

describe('serve options', () => {
  it('defaults to 127.0.0.1:9200 with the bundled sandbox file', () => {
    const o = parseServeOptions([], {});
    expect(o.host).toBe('127.0.0.1');
    expect(o.port).toBe(9200);
    expect(String(o.runtime.sandboxes)).toMatch(/config[/\\]sandboxes\.json$/);
    expect(o.runtime.dataDir).toBe('.query-sandbox');
  });

  it('takes the port from PORT and lets --port win', () => {
    expect(parseServeOptions([], { PORT: '9300' }).port).toBe(9300);
    expect(parseServeOptions(['--port', '9400'], { PORT: '9300' }).port).toBe(9400);
  });

  it('takes the data dir from QUERY_SANDBOX_DATA_DIR', () => {
    expect(parseServeOptions([], { QUERY_SANDBOX_DATA_DIR: '/tmp/qs' }).runtime.dataDir).toBe('/tmp/qs');
  });

  it('refuses a bad port naming the flag and the value', () => {
    expect(() => parseServeOptions(['--port', 'abc'], {})).toThrow(
      '--port must be an integer in 0..65535; received "abc"',
    );
    expect(() => parseServeOptions([], { PORT: '70000' })).toThrow(
      'PORT must be an integer in 0..65535; received "70000"',
    );
  });

  it('refuses an unknown enforcement mode and log level naming the flag', () => {
    expect(() => parseServeOptions(['--enforcement', 'maybe'], {})).toThrow(
      '--enforcement must be one of enforced (or enabled), monitor_only, disabled; received "maybe"',
    );
    expect(() => parseServeOptions([], { LOG_LEVEL: 'loud' })).toThrow('LOG_LEVEL must be one of');
  });

  it('refuses an unknown flag', () => {
    expect(() => parseServeOptions(['--frobnicate'], {})).toThrow(/arguments are invalid.*frobnicate/);
  });

  it('takes --queue-order and --query-priority, and refuses an unknown order', () => {
    const o = parseServeOptions(['--queue-order', 'fifo', '--query-priority', 'qp.json'], {});
    expect(o.runtime.queueOrder).toBe('fifo');
    expect(o.queryPriorityFile).toBe('qp.json');
    expect(() => parseServeOptions(['--queue-order', 'lifo'], {})).toThrow(
      '--queue-order must be one of priority, fifo; received "lifo"',
    );
  });

  it('passes --max-docs to the engine and --threads to the runtime', () => {
    const o = parseServeOptions(['--max-docs', '100', '--threads', '3', '--max-sandboxes', '10'], {});
    expect(o.runtime.maxSandboxes).toBe(10);
    expect(o.runtime.engineOptions).toEqual({ maxDocumentsPerIndex: 100 });
    expect(o.runtime.threads).toBe(3);
  });
});

describe('serve options: lanes', () => {
  it('keeps the default lanes unless a lane flag is given', () => {
    expect(parseServeOptions([], {}).runtime.lanes).toBeUndefined();
    expect(parseServeOptions(['--lanes', 'on'], {}).runtime.lanes).toBeUndefined();
    expect(parseServeOptions(['--lanes', 'off', '--threads', '3'], {}).runtime).toMatchObject({
      lanes: false,
      threads: 3,
    });
  });

  it('builds the two lanes from their flags', () => {
    const o = parseServeOptions(
      [
        '--foreground-workers',
        '1',
        '--background-workers',
        '3',
        '--background-weight',
        'idle',
        '--foreground-min-priority',
        '15',
        '--spare-workers',
        '0',
        '--prefetch-tasks',
        '2',
      ],
      {},
    );
    expect(o.runtime.spareWorkers).toBe(0);
    expect(o.runtime.prefetchTasks).toBe(2);
    expect(o.runtime.lanes).toEqual([
      { name: 'foreground', minPriority: 15, weight: 0, workers: 1 },
      { name: 'background', weight: 'idle', workers: 3 },
    ]);
    expect(parseServeOptions(['--background-weight', '10'], {}).runtime.lanes).toEqual([
      { name: 'foreground', minPriority: 11, weight: 0 },
      { name: 'background', weight: 10 },
    ]);
  });

  it.each([
    [['--lanes', 'maybe'], '--lanes must be one of on, off; received "maybe"'],
    [['--lanes', 'off', '--background-workers', '2'], '--background-workers needs --lanes on; received "2"'],
    [
      ['--background-weight', '25'],
      '--background-weight (a nice value, or idle) must be an integer in 0..19; received "25"',
    ],
    [
      ['--background-weight', 'low'],
      '--background-weight (a nice value, or idle) must be an integer in 0..19; received "low"',
    ],
    [['--foreground-workers', '0'], '--foreground-workers must be an integer in 1..1024; received "0"'],
    [['--spare-workers=-1'], '--spare-workers must be an integer in 0..64; received "-1"'],
    [['--prefetch-tasks', '65'], '--prefetch-tasks must be an integer in 0..64; received "65"'],
    [
      ['--role', 'coordinator', '--data-nodes', 'h:1', '--lanes', 'off'],
      '--lanes is only for a node that runs searches',
    ],
  ])('refuses %j naming the flag and the value', (argv, message) => {
    expect(() => parseServeOptions(argv, {})).toThrow(message);
  });
});

describe('demo options', () => {
  it('splits its own flags from the serve flags', () => {
    const o = parseDemoOptions(['--phase-seconds', '3', '--threads', '2', '--dashboard-rate=5'], {});
    expect(o.phaseSeconds).toBe(3);
    expect(o.dashboardRate).toBe(5);
    expect(o.analystConcurrency).toBe(4);
    expect(o.runtime.threads).toBe(2);
  });

  it('refuses a bad phase length', () => {
    expect(() => parseDemoOptions(['--phase-seconds', '0'], {})).toThrow(
      '--phase-seconds must be an integer in 1..600; received "0"',
    );
  });
});

describe('serve options: cluster roles', () => {
  it('takes the write-side flags: translog durability, fsync period, indexing pressure', () => {
    const o = parseServeOptions(
      [
        '--translog-durability',
        'async',
        '--translog-sync-interval-ms',
        '250',
        '--indexing-pressure-bytes',
        '1048576',
      ],
      {},
    );
    expect(o.runtime).toMatchObject({
      translogDurability: 'async',
      translogSyncIntervalMs: 250,
      indexingPressureBytes: 1048576,
    });
    expect(o.runtime.nodeRole).toBeUndefined();
    const data = parseServeOptions(['--role', 'data', '--node-id', 'd1'], {});
    expect(data.runtime.nodeRole).toBe('data');
    const c = parseServeOptions(
      ['--role', 'coordinator', '--data-nodes', 'h:1', '--indexing-pressure-bytes', '2048'],
      {},
    );
    expect(c.coordinator?.indexingPressureBytes).toBe(2048);
    expect(c.runtime.indexingPressureBytes).toBeUndefined();
    expect(() => parseServeOptions(['--translog-durability', 'never'], {})).toThrow(
      '--translog-durability must be one of request, async; received "never"',
    );
    expect(() => parseServeOptions(['--indexing-pressure-bytes', '0'], {})).toThrow(
      /--indexing-pressure-bytes must be an integer in 1\.\.\d+; received "0"/,
    );
    expect(() =>
      parseServeOptions(
        ['--role', 'coordinator', '--data-nodes', 'h:1', '--translog-durability', 'async'],
        {},
      ),
    ).toThrow(
      '--translog-durability is only for a node that runs searches (--role single or data); received "async"',
    );
  });

  it('defaults to a single node holding every shard', () => {
    const o = parseServeOptions([], {});
    expect(o.role).toBe('single');
    expect(o.coordinator).toBeUndefined();
    expect(o.debugRoutes).toBe(false);
  });

  it('takes a data node with its id, cluster file, cores, cache and tracker settings', () => {
    const o = parseServeOptions(
      [
        '--role',
        'data',
        '--node-id',
        'data-2',
        '--cluster',
        'c.json',
        '--cores',
        '1.5',
        '--cache-dir',
        'cache',
        '--usage-interval-ms',
        '250',
        '--usage-window-ms',
        '5000',
        '--debug-routes',
        '--max-docs',
        '9',
      ],
      {},
    );
    expect(o.role).toBe('data');
    expect(o.clusterFile).toBe('c.json');
    expect(o.debugRoutes).toBe(true);
    expect(o.runtime).toMatchObject({
      nodeId: 'data-2',
      cores: 1.5,
      cacheDir: 'cache',
      resourceUsage: { intervalMs: 250, windowMs: 5000 },
      engineOptions: { maxDocumentsPerIndex: 9 },
    });
    expect(parseServeOptions(['--shards-per-index', '4'], {}).runtime.engineOptions).toEqual({
      shardsPerIndex: 4,
    });
  });

  it('takes a coordinator with its data nodes and admission settings, with defaults', () => {
    const o = parseServeOptions(
      ['--role', 'coordinator', '--data-nodes', '127.0.0.1:9201,127.0.0.1:9202'],
      {},
    );
    expect(o.coordinator).toEqual({
      nodeId: 'coordinator',
      dataNodes: [
        { id: undefined, url: 'http://127.0.0.1:9201' },
        { id: undefined, url: 'http://127.0.0.1:9202' },
      ],
      admissionMode: 'enforced',
      admissionCpu: undefined,
      admissionHeap: undefined,
      duressCpu: undefined,
      duressHeap: undefined,
      statsTtlMs: undefined,
      statsRefreshMs: undefined,
      shardTimeoutMs: undefined,
      discoveryTimeoutMs: undefined,
    });
    const tuned = parseServeOptions(
      [
        '--role',
        'coordinator',
        '--cluster',
        'c.json',
        '--admission-mode',
        'monitor_only',
        '--admission-cpu',
        '0.8',
        '--admission-heap',
        '.85',
        '--duress-cpu',
        '0.7',
        '--duress-heap',
        '1',
        '--stats-ttl-ms',
        '3000',
        '--stats-refresh-ms',
        '0',
        '--shard-timeout-ms',
        '5000',
        '--discovery-timeout-ms',
        '1500',
        '--node-id',
        'coord-a',
      ],
      {},
    ).coordinator;
    expect(tuned).toMatchObject({
      nodeId: 'coord-a',
      admissionMode: 'monitor_only',
      admissionCpu: 0.8,
      admissionHeap: 0.85,
      duressCpu: 0.7,
      duressHeap: 1,
      statsTtlMs: 3000,
      statsRefreshMs: 0,
      shardTimeoutMs: 5000,
      discoveryTimeoutMs: 1500,
    });
  });

  it.each([
    [['--role', 'master'], '--role must be one of single, data, coordinator; received "master"'],
    [['--data-nodes', 'h:1'], '--data-nodes is only for --role coordinator; received "h:1"'],
    [
      ['--role', 'data', '--admission-cpu', '0.5'],
      '--admission-cpu is only for --role coordinator; received "0.5"',
    ],
    [
      ['--role', 'coordinator', '--cluster', 'c', '--threads', '2'],
      '--threads is only for a node that runs searches',
    ],
    [['--role', 'coordinator'], '--role coordinator needs --cluster FILE or --data-nodes host:port,...'],
    [
      ['--role', 'coordinator', '--cluster', 'c', '--data-nodes', 'h:1'],
      '--data-nodes cannot be combined with --cluster',
    ],
    [
      ['--role', 'coordinator', '--data-nodes', 'h'],
      '--data-nodes must be http://host:port or host:port (with a port, no path); received "h"',
    ],
    [
      ['--role', 'coordinator', '--cluster', 'c', '--admission-mode', 'on'],
      '--admission-mode must be one of enforced (or enabled), monitor_only, disabled; received "on"',
    ],
    [
      ['--role', 'coordinator', '--cluster', 'c', '--discovery-timeout-ms', '50'],
      '--discovery-timeout-ms must be an integer in 100..3600000; received "50"',
    ],
    [
      ['--role', 'data', '--discovery-timeout-ms', '1000'],
      '--discovery-timeout-ms is only for --role coordinator; received "1000"',
    ],
    [
      ['--role', 'coordinator', '--cluster', 'c', '--admission-cpu', '1.2'],
      '--admission-cpu must be a ratio in (0, 1]; received "1.2"',
    ],
    [
      ['--role', 'coordinator', '--cluster', 'c', '--duress-heap', '0'],
      '--duress-heap must be a ratio in (0, 1]; received "0"',
    ],
    [
      ['--role', 'coordinator', '--cluster', 'c', '--shard-timeout-ms', '10'],
      '--shard-timeout-ms must be an integer in 100..600000; received "10"',
    ],
    [['--cluster', 'c'], '--cluster is only for --role data or coordinator; received "c"'],
    [
      ['--role', 'data', '--cluster', 'c', '--shards-per-index', '2'],
      '--shards-per-index cannot be combined with --cluster',
    ],
    [['--debug-routes'], '--debug-routes is only for --role data; received true'],
    [['--node-id', 'a b'], '--node-id must be 1..64 characters of [A-Za-z0-9_.-]; received "a b"'],
    [['--cores', '0'], '--cores must be a number in (0, 4096]; received "0"'],
    [['--cores', 'two'], '--cores must be a number in (0, 4096]; received "two"'],
    [['--shards-per-index', '65'], '--shards-per-index must be an integer in 1..64; received "65"'],
    [
      ['--usage-window-ms', '100'],
      '--usage-window-ms must be at least the sampling interval (500 ms); received "100"',
    ],
  ])('refuses %j naming the flag and the value', (argv, message) => {
    expect(() => parseServeOptions(argv, {})).toThrow(message);
  });
});

describe('security options', () => {
  it('takes the time-outs and the connection bound, and leaves them to the defaults without flags', () => {
    expect(parseServeOptions([], {}).connectionLimits).toEqual({});
    expect(parseServeOptions([], {}).insecureSkipAuth).toBe(false);
    const o = parseServeOptions(
      ['--headers-timeout-ms', '5000', '--request-timeout-ms', '60000', '--max-connections', '64'],
      {},
    );
    expect(o.connectionLimits).toEqual({
      headersTimeoutMs: 5000,
      requestTimeoutMs: 60_000,
      maxConnections: 64,
    });
    const coordinator = parseServeOptions(
      ['--role', 'coordinator', '--data-nodes', 'h:1', '--request-timeout-ms', '40000'],
      {},
    );
    expect(coordinator.connectionLimits).toEqual({ requestTimeoutMs: 40_000 });
  });

  it.each([
    [['--headers-timeout-ms', '0'], '--headers-timeout-ms must be an integer in 1..3600000; received "0"'],
    [
      ['--request-timeout-ms', '10s'],
      '--request-timeout-ms must be an integer in 1..3600000; received "10s"',
    ],
    [
      ['--request-timeout-ms', '1000'],
      '--request-timeout-ms must be at least --headers-timeout-ms (30000): the headers are part of the request; received "1000"',
    ],
    [['--max-connections=-1'], '--max-connections must be an integer in 1..1000000; received "-1"'],
    [
      ['--insecure-skip-auth', '--host', '0.0.0.0'],
      '--insecure-skip-auth is only for local experiments: it needs --host to be a loopback address (127.0.0.1, ::1, localhost); received "0.0.0.0"',
    ],
  ])('refuses %j naming the flag and the value', (argv, message) => {
    expect(() => parseServeOptions(argv, {})).toThrow(message);
  });

  it('takes --insecure-skip-auth on a loopback host only', () => {
    expect(parseServeOptions(['--insecure-skip-auth'], {}).insecureSkipAuth).toBe(true);
    expect(() => parseServeOptions(['--insecure-skip-auth'], { HOST: '192.168.1.4' })).toThrow(
      '--insecure-skip-auth',
    );
    expect(['127.0.0.1', '127.1.2.3', '::1', 'localhost'].every(isLoopbackHost)).toBe(true);
    expect(['0.0.0.0', '::', '10.0.0.1', '127.0.0.1.example.com'].some(isLoopbackHost)).toBe(false);
  });
});

describe('node secrets', () => {
  const A = 'admin-token-0123456789';
  const W = 'writer-token-0123456789';
  const S = 'cluster-secret-0123456789';
  it('reads the writer token and the cluster secret; a single node needs no secret', () => {
    expect(readNodeSecrets({}, 'single')).toEqual({ writerToken: undefined, clusterSecret: undefined });
    expect(
      readNodeSecrets(
        { QUERY_SANDBOX_WRITER_TOKEN: W, QUERY_SANDBOX_CLUSTER_SECRET: S, QUERY_SANDBOX_ADMIN_TOKEN: A },
        'data',
      ),
    ).toEqual({ writerToken: W, clusterSecret: S });
  });

  it.each([
    [{}, 'data', /^QUERY_SANDBOX_CLUSTER_SECRET is required with --role data: /],
    [{}, 'coordinator', /^QUERY_SANDBOX_CLUSTER_SECRET is required with --role coordinator: /],
    [
      { QUERY_SANDBOX_WRITER_TOKEN: 'short' },
      'single',
      /^QUERY_SANDBOX_WRITER_TOKEN must be at least 16 characters without spaces; received "shor\.\.\. \(5 characters\)"$/,
    ],
    [
      { QUERY_SANDBOX_CLUSTER_SECRET: 'with a space 0123456' },
      'data',
      /^QUERY_SANDBOX_CLUSTER_SECRET must be at least 16 characters without spaces/,
    ],
    [
      { QUERY_SANDBOX_WRITER_TOKEN: A, QUERY_SANDBOX_ADMIN_TOKEN: A },
      'single',
      /^QUERY_SANDBOX_WRITER_TOKEN must differ from QUERY_SANDBOX_ADMIN_TOKEN; received "admi\.\.\. \(22 characters\)"$/,
    ],
    [
      { QUERY_SANDBOX_CLUSTER_SECRET: W, QUERY_SANDBOX_WRITER_TOKEN: W },
      'data',
      /^QUERY_SANDBOX_CLUSTER_SECRET must differ from QUERY_SANDBOX_WRITER_TOKEN/,
    ],
  ] as const)('refuses %j for --role %s, naming the variable without printing it', (env, role, message) => {
    expect(() => readNodeSecrets(env, role)).toThrow(message);
  });
});
