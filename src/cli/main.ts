#!/usr/bin/env node
/** The `query-sandbox` command: `serve`, `demo`. */
import { isQuerySandboxError } from '../errors.js';
import { runDemo, parseDemoOptions, DEMO_USAGE } from './demo.js';
import { serve } from './serve.js';
import { parseServeOptions, SERVE_USAGE } from './serve-options.js';

const USAGE = `usage: query-sandbox <command> [options]

commands:
  serve    run the governed search service (HTTP, default 127.0.0.1:9200)
  demo     start a service and run a bounded two-sandbox load against it, enforcement off then on

${SERVE_USAGE}
${DEMO_USAGE}`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      await serve(parseServeOptions(rest, process.env));
      return -1; // keeps running
    case 'demo':
      await runDemo(parseDemoOptions(rest, process.env));
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
    if (isQuerySandboxError(error)) {
      process.stderr.write(`query-sandbox: ${error.message}\n`);
    } else {
      process.stderr.write(
        `query-sandbox: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
    }
    process.exit(1);
  },
);
