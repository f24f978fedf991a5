import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import * as errors from '../src/errors.js';
import {
  CancelledError,
  ClusterDiscoveryError,
  ClusterStartError,
  ErrorCode,
  httpStatusOf,
  IndexNotFoundError,
  InvalidArgumentError,
  InvalidSandboxError,
  isQuerySandboxError,
  QuerySandboxError,
  RejectedError,
  RemoteClientError,
} from '../src/errors.js';
import { toErrorResponse } from '../src/server/error-body.js';

/** The error module loaded a second time, in a fresh `vm` context: another realm, other classes. */
function errorsInAnotherRealm(): typeof errors {
  const source = readFileSync(new URL('../src/errors.ts', import.meta.url), 'utf8');
  const js = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
  }).outputText;
  const module = { exports: {} as Record<string, unknown> };
  const context = vm.createContext({ module, exports: module.exports });
  vm.runInContext(js, context);
  return module.exports as unknown as typeof errors;
}

const readme = readFileSync(new URL('../docs/errors.md', import.meta.url), 'utf8');

/** Rows of the error table in docs/errors.md: `| CODE | status | type | meaning |`. */
function readmeErrorRows(): Map<string, { status: number; type: string }> {
  const rows = new Map<string, { status: number; type: string }>();
  for (const line of readme.split('\n')) {
    const m = /^\|\s*`(QS_[A-Z_]+)`\s*\|\s*(\d{3})\s*\|\s*`([a-z_]+)`/.exec(line);
    if (m) rows.set(m[1]!, { status: Number(m[2]), type: m[3]! });
  }
  return rows;
}

describe('errors', () => {
  it('lists every error code in the error table of docs/errors.md, and no other', () => {
    expect([...readmeErrorRows().keys()].sort()).toEqual(Object.values(ErrorCode).sort());
  });

  it('documents the status that the server really answers for each code', () => {
    const rows = readmeErrorRows();
    expect(rows.get(ErrorCode.REJECTED)?.status).toBe(httpStatusOf(new RejectedError('s', 'cpu', 'x')));
    expect(rows.get(ErrorCode.CANCELLED)?.status).toBe(
      httpStatusOf(new CancelledError('s', 'cpu', false, 'x')),
    );
    expect(rows.get(ErrorCode.INDEX_NOT_FOUND)?.status).toBe(httpStatusOf(new IndexNotFoundError('i')));
    expect(rows.get(ErrorCode.INVALID_SANDBOX)?.status).toBe(
      httpStatusOf(new InvalidSandboxError('p', 'must', 1)),
    );
    expect(rows.get(ErrorCode.REJECTED)?.type).toBe('rejected_execution_exception');
    expect(rows.get(ErrorCode.CANCELLED)?.type).toBe('task_cancelled_exception');
  });

  it('recognises its errors across realms by a symbol brand', () => {
    const e = new RejectedError('s', 'queue', 'full');
    expect(isQuerySandboxError(e)).toBe(true);
    expect(isQuerySandboxError(new Error('x'))).toBe(false);
    expect(isQuerySandboxError({ [Symbol.for('query-sandbox.error')]: true })).toBe(true);
  });

  it('keeps instanceof, the code and the HTTP status for an error made in another realm', () => {
    const other = errorsInAnotherRealm();
    expect(other.RejectedError).not.toBe(RejectedError);
    const rejected = new other.RejectedError('s1', 'cpu', 'over its low limit');
    // A plain prototype check fails across realms; the brand does not.
    expect(Object.getPrototypeOf(Object.getPrototypeOf(rejected))).not.toBe(QuerySandboxError.prototype);
    expect(rejected instanceof Error).toBe(false);
    expect(rejected).toBeInstanceOf(RejectedError);
    expect(rejected).toBeInstanceOf(QuerySandboxError);
    expect(rejected).not.toBeInstanceOf(CancelledError);
    expect(isQuerySandboxError(rejected)).toBe(true);
    expect(httpStatusOf(rejected)).toBe(429);
    expect(toErrorResponse(rejected).body.error).toMatchObject({
      type: 'rejected_execution_exception',
      code: 'QS_REJECTED',
      sandbox_id: 's1',
      rejection_reason: 'limit',
    });
    // A subclass carries the brands of every class above it.
    const invalid = new other.InvalidSandboxError('sandboxes[0].priority', 'must be an integer', 1.5);
    expect(invalid).toBeInstanceOf(InvalidSandboxError);
    expect(invalid).toBeInstanceOf(InvalidArgumentError);
    expect(new other.InvalidArgumentError('x', 'must', 1)).not.toBeInstanceOf(InvalidSandboxError);
    // And the other way round: this realm's errors are instances of the other realm's classes.
    expect(new RejectedError('s', 'queue', 'full')).toBeInstanceOf(other.RejectedError);
    expect(new Error('plain')).not.toBeInstanceOf(RejectedError);
    expect(null).not.toBeInstanceOf(QuerySandboxError);
  });

  it('has every error class of src/ in the registry, each with its own code', () => {
    const src = fileURLToPath(new URL('../src/', import.meta.url));
    // Internal control flow that never leaves its module (each caught where it is thrown).
    const internal = new Set(['RequestFailure', 'SearchTimedOut']);
    const outside: string[] = [];
    for (const file of readdirSync(src, { recursive: true }) as string[]) {
      if (!file.endsWith('.ts') || file === 'errors.ts') continue;
      for (const m of readFileSync(path.join(src, file), 'utf8').matchAll(
        /class (\w+) extends (\w*Error)\b/g,
      )) {
        if (!internal.has(m[1]!)) outside.push(`${file}: ${m[1]}`);
      }
    }
    expect(outside).toEqual([]);
    const classes = Object.values(errors).filter(
      (v): v is typeof QuerySandboxError => typeof v === 'function' && v.prototype instanceof Error,
    );
    expect(classes.length).toBeGreaterThanOrEqual(30);
    for (const c of classes)
      expect(c === QuerySandboxError || Object.prototype.isPrototypeOf.call(QuerySandboxError, c)).toBe(true);
  });

  it('maps the cluster errors to HTTP in the one place', () => {
    const remote = new RemoteClientError(
      'd1',
      404,
      { error: { type: 'index_not_found_exception', reason: 'no such index [x]' }, status: 404 },
      'no such index [x]',
    );
    expect(httpStatusOf(remote)).toBe(404);
    expect(toErrorResponse(remote)).toEqual({ status: 404, body: remote.body });
    expect(remote).toMatchObject({ code: ErrorCode.REMOTE_CLIENT_ERROR, type: 'index_not_found_exception' });
    expect(httpStatusOf(new ClusterStartError('node data-1 exited', 'data-1'))).toBe(500);
    const discovery = new ClusterDiscoveryError('http://127.0.0.1:1', 'no answer');
    expect(discovery).toMatchObject({
      code: ErrorCode.CLUSTER_DISCOVERY,
      name: 'ClusterDiscoveryError',
      url: 'http://127.0.0.1:1',
    });
    const rows = readmeErrorRows();
    expect(rows.get(ErrorCode.CLUSTER_START)?.status).toBe(500);
    expect(rows.get(ErrorCode.REMOTE_CLIENT_ERROR)?.type).toBe('exception');
  });

  it('formats messages with the path and the received value', () => {
    expect(new InvalidSandboxError('sandboxes[2].priority', 'must be an integer', 1.5).message).toBe(
      'sandboxes[2].priority must be an integer; received 1.5',
    );
  });
});
