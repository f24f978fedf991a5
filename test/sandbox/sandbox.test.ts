import { describe, expect, it } from 'vitest';
import { createRootSandbox, RESOURCES, ROOT_SANDBOX_ID, SandboxMode } from '../../src/sandbox/sandbox.js';

describe('createRootSandbox', () => {
  it('makes a frozen root with no parent, no limits, no attributes and priority 0', () => {
    const root = createRootSandbox();
    expect(root).toEqual({
      id: ROOT_SANDBOX_ID,
      name: ROOT_SANDBOX_ID,
      parentId: null,
      priority: 0,
      mode: SandboxMode.ENFORCED,
      limits: {},
      selectionAttributes: { userPattern: [], indicesPattern: [] },
      tags: [],
      searchSettings: {},
      maxConcurrentTasks: undefined,
      maxConcurrentTasksPerUser: undefined,
      updatedAt: 0,
      version: 1,
    });
    expect(Object.isFrozen(root)).toBe(true);
    expect(Object.isFrozen(root.selectionAttributes)).toBe(true);
  });

  it('takes the priority from the overrides', () => {
    expect(createRootSandbox({ priority: 10 }).priority).toBe(10);
  });

  it('lists cpu then memory as the resources', () => {
    expect(RESOURCES).toEqual(['cpu', 'memory']);
  });
});
