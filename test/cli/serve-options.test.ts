import { describe, expect, it } from 'vitest';
import { parseDemoOptions } from '../../src/cli/demo.js';
import { parseServeOptions } from '../../src/cli/serve-options.js';

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
      '--enforcement must be one of enabled, monitor_only, disabled; received "maybe"',
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
