import { describe, expect, it } from 'vitest';
import { nearName } from '../../src/common/near-name.js';

describe('nearName', () => {
  it('finds a known name one edit or a letter case away, and nothing for an exact or distant one', () => {
    const known = ['port', 'host', 'threads', 'workerHeapMb'];
    expect(nearName('prot', known)).toBeUndefined(); // a transposition is two edits
    expect(nearName('pot', known)).toBe('port');
    expect(nearName('ports', known)).toBe('port');
    expect(nearName('thread', known)).toBe('threads');
    expect(nearName('workerHeapMB', known)).toBe('workerHeapMb');
    expect(nearName('port', known)).toBeUndefined();
    expect(nearName('colour', known)).toBeUndefined();
  });
});
