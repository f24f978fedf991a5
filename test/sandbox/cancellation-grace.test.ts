import { describe, expect, it } from 'vitest';
import { InvalidSandboxError } from '../../src/errors.js';
import { effectiveCancellationGrace } from '../../src/sandbox/cancellation-grace.js';
import { toSandboxDocument } from '../../src/sandbox/sandbox-document.js';
import { parseSandboxDefinitions } from '../../src/sandbox/sandbox-file.js';
import { SandboxRegistry } from '../../src/sandbox/sandbox-registry.js';
import { MemorySandboxStore } from '../../src/sandbox/sandbox-store.js';

const tree = {
  sandboxes: [
    { _id: '_root', priority: 0, cancellationGraceMs: 1000 },
    { name: 'legacy', priority: 1, cancellationGraceMs: 'never' },
    { name: 'legacy-bi', priority: 1, parent_id: 'legacy' },
    { name: 'quick', priority: 2, cancellationGraceMs: 0 },
    { name: 'quick-child', priority: 1, parent_id: 'quick', cancellationGraceMs: 50 },
    { name: 'plain', priority: 3 },
  ],
};

function refusal(value: unknown): InvalidSandboxError {
  try {
    parseSandboxDefinitions({ sandboxes: [{ name: 'a', priority: 1, cancellationGraceMs: value }] });
  } catch (error) {
    return error as InvalidSandboxError;
  }
  throw new Error(`accepted ${JSON.stringify(value)}`);
}

describe('cancellationGraceMs', () => {
  it('is inherited down the tree: own value, else the nearest ancestor, else the runtime default', () => {
    const sandboxes = parseSandboxDefinitions(tree);
    const grace = effectiveCancellationGrace(sandboxes, 200);
    expect(Object.fromEntries(grace)).toEqual({
      _root: 1000,
      legacy: Number.POSITIVE_INFINITY,
      'legacy-bi': Number.POSITIVE_INFINITY,
      quick: 0,
      'quick-child': 50,
      plain: 1000,
    });
    const withoutRoot = parseSandboxDefinitions({ sandboxes: [{ name: 'plain', priority: 3 }] });
    expect(Object.fromEntries(effectiveCancellationGrace(withoutRoot, 200))).toEqual({
      _root: 200,
      plain: 200,
    });
  });

  it('refuses anything but an integer of ms in 0..3600000 or "never", naming the field and value', () => {
    for (const bad of [-1, 1.5, 3_600_001, '100', 'forever', null, true]) {
      const error = refusal(bad);
      expect(error).toBeInstanceOf(InvalidSandboxError);
      expect(error.path).toBe('sandboxes[0].cancellationGraceMs');
      expect(error.message).toBe(
        `sandboxes[0].cancellationGraceMs must be an integer number of ms in 0..3600000 or "never"; received ${JSON.stringify(bad)}`,
      );
    }
  });

  it('takes "never" in any case, as the modes are taken, and stores it as "never"', () => {
    for (const word of ['Never', 'NEVER', 'never']) {
      const [, sandbox] = parseSandboxDefinitions({
        sandboxes: [
          { name: 'a', priority: 1, cancellationGraceMs: word, mode: word === 'never' ? 'soft' : 'Soft' },
        ],
      });
      expect(sandbox?.cancellationGraceMs).toBe('never');
      expect(sandbox?.mode).toBe('soft');
    }
  });

  it('round-trips through the stored document, the root included', () => {
    const sandboxes = parseSandboxDefinitions(tree);
    const documents = sandboxes.map(toSandboxDocument);
    expect(documents[0]).toMatchObject({ _id: '_root', cancellationGraceMs: 1000 });
    expect(documents.find((d) => d['_id'] === 'legacy')).toMatchObject({ cancellationGraceMs: 'never' });
    expect(documents.find((d) => d['_id'] === 'plain')).not.toHaveProperty('cancellationGraceMs');
    expect(parseSandboxDefinitions({ sandboxes: documents })).toEqual(sandboxes);
  });

  it('is set, changed and removed (null: inherit again) through the registry, on the root too', async () => {
    const registry = await SandboxRegistry.open({ store: new MemorySandboxStore(), newId: () => 'id1' });
    const created = await registry.create({ name: 'legacy', priority: 1, cancellationGraceMs: 'never' });
    expect(created.cancellationGraceMs).toBe('never');
    const changed = await registry.update('id1', { cancellationGraceMs: 5000 });
    expect(changed.cancellationGraceMs).toBe(5000);
    const removed = await registry.update('id1', { cancellationGraceMs: null });
    expect(removed).not.toHaveProperty('cancellationGraceMs');
    const root = await registry.update('_root', { cancellationGraceMs: 2000 });
    expect(root.cancellationGraceMs).toBe(2000);
    expect(effectiveCancellationGrace(registry.list(), 200).get('id1')).toBe(2000);
    await expect(registry.update('id1', { cancellationGraceMs: -5 })).rejects.toThrow(
      'cancellationGraceMs must be an integer number of ms in 0..3600000 or "never"; received -5',
    );
  });
});
