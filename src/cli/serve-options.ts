/**
 * Command-line and environment options of `query-sandbox serve` (and the demo), parsed and checked
 * into runtime options. Flags win over environment variables, which win over defaults.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { InvalidArgumentError } from '../errors.js';
import type { EnforcementMode } from '../governor/decide.js';
import type { RuntimeOptions } from '../runtime-options.js';
import { packageRoot } from './package-root.js';

export interface ServeOptions {
  readonly host: string;
  readonly port: number;
  readonly runtime: RuntimeOptions;
  readonly logLevel: string;
  /** `--query-priority`: a JSON file read at start (see `serve`). */
  readonly queryPriorityFile: string | undefined;
}

export const SERVE_USAGE = `query-sandbox serve [options]

  --host HOST            listen address (default 127.0.0.1; HOST)
  --port N               listen port, 0 for any (default 9200; PORT)
  --sandboxes FILE       sandbox file (default config/sandboxes.json; QUERY_SANDBOX_SANDBOXES)
  --data-dir DIR         caches and state (default ./.query-sandbox; QUERY_SANDBOX_DATA_DIR)
  --threads N            worker threads (default: cores)
  --engine MODULE        engine module path (default: built-in MiniSearch over SpamAssassin)
  --enforcement MODE     enabled | monitor_only | disabled (default enabled)
  --interval-ms N        governor interval (default 100)
  --max-sandboxes N      most sandboxes besides the root; creates beyond answer 429 (default 100)
  --max-docs N           index at most N mails per index (engine option maxDocumentsPerIndex)
  --query-priority FILE  query-priority rules (JSON) seeding DIR/query-priority.json when it is absent
  --queue-order ORDER    priority | fifo (the baseline: arrival order, no reservations; default priority)
  --log-level LEVEL      pino level (default info; LOG_LEVEL)
`;

function intFlag(
  name: string,
  text: string | undefined,
  min: number,
  max: number,
  label = `--${name}`,
): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^-?\d+$/.test(text) || n < min || n > max) {
    throw new InvalidArgumentError(label, `must be an integer in ${min}..${max}`, text);
  }
  return n;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const ENFORCEMENT_MODES = ['enabled', 'monitor_only', 'disabled'];

/** Parses `argv` (after the sub-command) and `env`. @throws InvalidArgumentError naming the flag. */
export function parseServeOptions(argv: readonly string[], env: NodeJS.ProcessEnv): ServeOptions {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        host: { type: 'string' },
        port: { type: 'string' },
        sandboxes: { type: 'string' },
        'data-dir': { type: 'string' },
        threads: { type: 'string' },
        engine: { type: 'string' },
        enforcement: { type: 'string' },
        'interval-ms': { type: 'string' },
        'max-sandboxes': { type: 'string' },
        'max-docs': { type: 'string' },
        'query-priority': { type: 'string' },
        'queue-order': { type: 'string' },
        'log-level': { type: 'string' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new InvalidArgumentError('arguments', `are invalid (${(error as Error).message})`, argv.join(' '));
  }
  const str = (k: string): string | undefined => values[k] as string | undefined;
  const port =
    str('port') !== undefined
      ? intFlag('port', str('port'), 0, 65535)!
      : (intFlag('port', env['PORT'], 0, 65535, 'PORT') ?? 9200);
  const threads = intFlag('threads', str('threads'), 1, 1024);
  const intervalMs = intFlag('interval-ms', str('interval-ms'), 10, 60_000);
  const maxDocs = intFlag('max-docs', str('max-docs'), 1, 1_000_000);
  const maxSandboxes = intFlag('max-sandboxes', str('max-sandboxes'), 0, 10_000);
  const enforcement = str('enforcement');
  if (enforcement !== undefined && !ENFORCEMENT_MODES.includes(enforcement)) {
    throw new InvalidArgumentError(
      '--enforcement',
      `must be one of ${ENFORCEMENT_MODES.join(', ')}`,
      enforcement,
    );
  }
  const queueOrder = str('queue-order');
  if (queueOrder !== undefined && queueOrder !== 'priority' && queueOrder !== 'fifo') {
    throw new InvalidArgumentError('--queue-order', 'must be one of priority, fifo', queueOrder);
  }
  const logLevel = str('log-level') ?? env['LOG_LEVEL'] ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new InvalidArgumentError(
      str('log-level') !== undefined ? '--log-level' : 'LOG_LEVEL',
      `must be one of ${LOG_LEVELS.join(', ')}`,
      logLevel,
    );
  }
  const runtime: RuntimeOptions = {
    sandboxes:
      str('sandboxes') ??
      env['QUERY_SANDBOX_SANDBOXES'] ??
      path.join(packageRoot(), 'config', 'sandboxes.json'),
    dataDir: str('data-dir') ?? env['QUERY_SANDBOX_DATA_DIR'] ?? '.query-sandbox',
    ...(threads !== undefined ? { threads } : {}),
    ...(intervalMs !== undefined ? { intervalMs } : {}),
    ...(maxSandboxes !== undefined ? { maxSandboxes } : {}),
    ...(str('engine') !== undefined ? { engine: str('engine')! } : {}),
    ...(enforcement !== undefined ? { enforcement: enforcement as EnforcementMode } : {}),
    ...(maxDocs !== undefined ? { engineOptions: { maxDocumentsPerIndex: maxDocs } } : {}),
    ...(queueOrder !== undefined ? { queueOrder } : {}),
  };
  return {
    queryPriorityFile: str('query-priority'),
    host: str('host') ?? env['HOST'] ?? '127.0.0.1',
    port,
    runtime,
    logLevel,
  };
}
