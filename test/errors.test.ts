import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  CancelledError,
  ErrorCode,
  httpStatusOf,
  IndexNotFoundError,
  InvalidSandboxError,
  isQuerySandboxError,
  RejectedError,
} from '../src/errors.js';

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

  it('formats messages with the path and the received value', () => {
    expect(new InvalidSandboxError('sandboxes[2].priority', 'must be an integer', 1.5).message).toBe(
      'sandboxes[2].priority must be an integer; received 1.5',
    );
  });
});
