import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/common/package-root.js';

describe('packageRoot', () => {
  it("finds this package's root (package.json and config/) from the module's own location", () => {
    const root = packageRoot();
    expect(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).name).toBe('query-sandbox');
    expect(existsSync(join(root, 'config'))).toBe(true);
  });
});
