#!/usr/bin/env -S node --single-threaded-gc
/** The `query-sandbox` command: `serve`, `cluster`, `demo`, `shard`. */
import { ClusterDiscoveryError } from '../cluster/discovery.js';
import { isQuerySandboxError } from '../errors.js';
import { CLUSTER_USAGE, ClusterStartError, parseClusterOptions, runCluster } from './cluster.js';
import { runDemo, parseDemoOptions, DEMO_USAGE } from './demo.js';
import { serve } from './serve.js';
import { parseServeOptions, SERVE_USAGE } from './serve-options.js';
import { runShardCommand, SHARD_USAGE } from './shard-command.js';

const USAGE = `usage: query-sandbox <command> [options]

commands:
  serve    run the governed search service (HTTP, default 127.0.0.1:9200)
  cluster  start a coordinator and data nodes on loopback as child processes (9200, 9201-9203)
  demo     start a service and run a bounded two-sandbox load against it, enforcement off then on
  shard    print the Elasticsearch shard a document id routes to

${SERVE_USAGE}
${CLUSTER_USAGE}
${DEMO_USAGE}
${SHARD_USAGE}`;

function wantsHelp(args: readonly string[]): boolean {
  return args.includes('--help') || args.includes('-h');
}

function usage(text: string): number {
  process.stdout.write(text);
  return 0;
}

/**
 * Errors a user can fix (bad input, a busy port, a missing file, a cluster that cannot start or find
 * its data nodes) are told in one line, without a stack.
 */
function isUserFacing(error: unknown): boolean {
  if (isQuerySandboxError(error)) return true;
  if (error instanceof ClusterStartError || error instanceof ClusterDiscoveryError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^(E[A-Z]+|ERR_MODULE_NOT_FOUND)$/.test(code);
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      if (wantsHelp(rest)) return usage(SERVE_USAGE);
      await serve(parseServeOptions(rest, process.env));
      return -1; // keeps running
    case 'cluster':
      if (wantsHelp(rest)) return usage(CLUSTER_USAGE);
      return runCluster(parseClusterOptions(rest, process.env));
    case 'demo':
      if (wantsHelp(rest)) return usage(DEMO_USAGE);
      await runDemo(parseDemoOptions(rest, process.env));
      return 0;
    case 'shard':
      if (wantsHelp(rest)) return usage(SHARD_USAGE);
      process.stdout.write(runShardCommand(rest));
      return 0;
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`unknown command [${command}]\n\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    if (isUserFacing(error)) {
      process.stderr.write(`query-sandbox: ${(error as Error).message}\n`);
    } else {
      process.stderr.write(
        `query-sandbox: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
    }
    process.exit(1);
  },
);
