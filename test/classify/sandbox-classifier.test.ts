import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SandboxClassifier } from '../../src/classify/sandbox-classifier.js';
import { ErrorCode, InvalidArgumentError, SandboxForbiddenError } from '../../src/errors.js';
import { createRootSandbox, ROOT_SANDBOX_ID } from '../../src/sandbox/sandbox.js';
import { loadSandboxFile, parseSandboxDefinitions } from '../../src/sandbox/sandbox-file.js';

type Attributes = { user?: string[]; indices?: string[] };

/** A sandbox file entry with the given patterns. */
function sandbox(name: string, priority: number, attributes: Attributes): Record<string, unknown> {
  const selectionAttributes: { name: string; value: string[] }[] = [];
  if (attributes.user !== undefined)
    selectionAttributes.push({ name: 'userPattern', value: attributes.user });
  if (attributes.indices !== undefined)
    selectionAttributes.push({ name: 'indicesPattern', value: attributes.indices });
  return { name, priority, selectionAttributes };
}

function classifier(...entries: Record<string, unknown>[]): SandboxClassifier {
  return new SandboxClassifier(parseSandboxDefinitions({ sandboxes: entries }));
}

function classify(c: SandboxClassifier, user: string | undefined, indices: string[] = []): string {
  return c.classify({ user, indices }).id;
}

function forbidden(fn: () => unknown): SandboxForbiddenError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(SandboxForbiddenError);
    return error as SandboxForbiddenError;
  }
  throw new Error('expected a SandboxForbiddenError');
}

describe('SandboxClassifier.classify', () => {
  it('chooses the root when nothing matches', () => {
    const c = classifier(sandbox('dash', 20, { user: ['dash_*'] }));
    expect(classify(c, 'bob')).toBe(ROOT_SANDBOX_ID);
    expect(classify(c, undefined, ['logs'])).toBe(ROOT_SANDBOX_ID);
  });

  it('chooses the sandbox whose user pattern matches', () => {
    const c = classifier(
      sandbox('dash', 20, { user: ['dash_*'] }),
      sandbox('ana', 5, { user: ['analyst_*'] }),
    );
    expect(classify(c, 'dash_alice')).toBe('dash');
    expect(classify(c, 'analyst_bob')).toBe('ana');
  });

  it('never chooses a user-pattern sandbox for an anonymous request', () => {
    const c = classifier(sandbox('all', 20, { user: ['*'] }));
    expect(classify(c, undefined, ['x'])).toBe(ROOT_SANDBOX_ID);
    expect(classify(c, '')).toBe('all');
  });

  it('matches any of several patterns of one attribute (OR)', () => {
    const c = classifier(sandbox('ops', 1, { user: ['ops_*', 'root_admin'] }));
    expect(classify(c, 'root_admin')).toBe('ops');
    expect(classify(c, 'ops_1')).toBe('ops');
    expect(classify(c, 'root_admin2')).toBe(ROOT_SANDBOX_ID);
  });

  it('requires every named attribute to match (conjunction)', () => {
    const c = classifier(sandbox('sales-logs', 1, { user: ['sales_*'], indices: ['logs-*'] }));
    expect(classify(c, 'sales_amy', ['logs-1'])).toBe('sales-logs');
    expect(classify(c, 'sales_amy', ['metrics-1'])).toBe(ROOT_SANDBOX_ID);
    expect(classify(c, 'hr_amy', ['logs-1'])).toBe(ROOT_SANDBOX_ID);
    expect(classify(c, undefined, ['logs-1'])).toBe(ROOT_SANDBOX_ID);
  });

  it('requires every index of the request to match, and at least one index', () => {
    const c = classifier(sandbox('ham', 1, { indices: ['easy-ham-*', 'hard-ham-1'] }));
    expect(classify(c, 'u', ['easy-ham-2', 'hard-ham-1'])).toBe('ham');
    expect(classify(c, 'u', ['easy-ham-2', 'spam-1'])).toBe(ROOT_SANDBOX_ID);
    expect(classify(c, 'u', [])).toBe(ROOT_SANDBOX_ID);
  });

  it('never chooses a sandbox that names no attribute implicitly', () => {
    const c = classifier({ name: 'explicit-only', priority: 100 });
    expect(classify(c, 'anyone', ['any'])).toBe(ROOT_SANDBOX_ID);
  });

  it('prefers the more specific user pattern regardless of priority', () => {
    const c = classifier(
      sandbox('any', 50, { user: ['*'] }),
      sandbox('dash', 1, { user: ['dash_*'] }),
      sandbox('alice', 0, { user: ['dash_alice'] }),
    );
    expect(classify(c, 'dash_alice')).toBe('alice');
    expect(classify(c, 'dash_bob')).toBe('dash');
    expect(classify(c, 'bob')).toBe('any');
  });

  it('adds up specificity over the named attributes', () => {
    const c = classifier(
      sandbox('user-only', 50, { user: ['dash_*'] }),
      sandbox('user-and-index', 1, { user: ['dash_*'], indices: ['l*'] }),
    );
    expect(classify(c, 'dash_a', ['logs'])).toBe('user-and-index');
    // `*` adds nothing: equal specificity, so the higher priority wins.
    const d = classifier(
      sandbox('user-only', 50, { user: ['dash_*'] }),
      sandbox('user-and-index', 1, { user: ['dash_*'], indices: ['*'] }),
    );
    expect(classify(d, 'dash_a', ['logs'])).toBe('user-only');
  });

  it('scores indices by the least specific match among the request indices', () => {
    const c = classifier(
      sandbox('broad', 1, { indices: ['logs-*'] }),
      sandbox('mixed', 2, { indices: ['logs-web-*', 'l*'] }),
    );
    // mixed: logs-web-1 -> 9, logs-db-1 -> 1; min 1 < broad's 5.
    expect(classify(c, undefined, ['logs-web-1', 'logs-db-1'])).toBe('broad');
    // mixed: only logs-web-1 -> 9 > 5.
    expect(classify(c, undefined, ['logs-web-1'])).toBe('mixed');
  });

  it('breaks a specificity tie by the higher priority', () => {
    // `ab*` and `ab*z` both have a literal prefix of 2.
    const c = classifier(sandbox('p1', 1, { user: ['ab*'] }), sandbox('p2', 2, { user: ['ab*z'] }));
    expect(classify(c, 'abz')).toBe('p2');
    const reversed = classifier(sandbox('p1', 2, { user: ['ab*'] }), sandbox('p2', 1, { user: ['ab*z'] }));
    expect(classify(reversed, 'abz')).toBe('p1');
  });

  it('breaks a full tie (specificity and priority) by the smaller id, whatever the file order', () => {
    // Equal priorities need different parents: siblings may not share one.
    const parents = [
      { name: 'p', priority: 1 },
      { name: 'q', priority: 2 },
    ];
    const b = { ...sandbox('b', 3, { user: ['x*y'] }), parent_id: 'p' };
    const a = { ...sandbox('a', 3, { user: ['x*'] }), parent_id: 'q' };
    expect(classify(classifier(...parents, b, a), 'xy')).toBe('a');
    expect(classify(classifier(...parents, a, b), 'xy')).toBe('a');
  });

  it('classifies the default config: dashboards, analysts, everyone else to the root', async () => {
    const c = new SandboxClassifier(
      await loadSandboxFile(fileURLToPath(new URL('../../config/sandboxes.json', import.meta.url))),
    );
    expect(classify(c, 'dash_kiosk')).toBe('dashboards');
    expect(classify(c, 'analyst_jo')).toBe('analysts');
    expect(classify(c, undefined)).toBe(ROOT_SANDBOX_ID);
  });
});

describe('SandboxClassifier construction and get', () => {
  it('returns sandboxes by id', () => {
    const c = classifier(sandbox('dash', 20, { user: ['dash_*'] }));
    expect(c.get('dash')?.name).toBe('dash');
    expect(c.get(ROOT_SANDBOX_ID)?.parentId).toBeNull();
    expect(c.get('nope')).toBeUndefined();
  });

  it('refuses a list without the root', () => {
    const [, dash] = parseSandboxDefinitions({ sandboxes: [sandbox('dash', 1, { user: ['d*'] })] });
    expect(() => new SandboxClassifier([dash!])).toThrow(InvalidArgumentError);
  });

  it('refuses duplicate ids', () => {
    expect(() => new SandboxClassifier([createRootSandbox(), createRootSandbox()])).toThrow(
      'sandboxes must have unique ids; received "_root"',
    );
  });
});

describe('SandboxClassifier.resolveExplicit', () => {
  const c = classifier(
    sandbox('dash', 20, { user: ['dash_*'] }),
    sandbox('logs', 10, { user: ['ops_*'], indices: ['logs-*'] }),
    { name: 'open', priority: 1 },
  );

  it('honours a choice whose attributes match', () => {
    expect(c.resolveExplicit('dash', { user: 'dash_a', indices: [] }).id).toBe('dash');
    expect(c.resolveExplicit('logs', { user: 'ops_1', indices: ['logs-a', 'logs-b'] }).id).toBe('logs');
  });

  it('allows the root only to a request that classification puts there anyway', () => {
    expect(c.resolveExplicit(ROOT_SANDBOX_ID, { user: undefined, indices: [] }).id).toBe(ROOT_SANDBOX_ID);
    expect(c.resolveExplicit(ROOT_SANDBOX_ID, { user: 'bob', indices: ['spam'] }).id).toBe(ROOT_SANDBOX_ID);
  });

  it('forbids the root to a request that belongs to another sandbox, naming that sandbox', () => {
    const error = forbidden(() => c.resolveExplicit(ROOT_SANDBOX_ID, { user: 'dash_a', indices: [] }));
    expect(error.sandboxId).toBe(ROOT_SANDBOX_ID);
    expect(error.message).toBe(
      'request may not use sandbox "_root": the root sandbox names no selection attributes, so only requests ' +
        'that match no other sandbox run in it; this request belongs to sandbox "dash"',
    );
  });

  it('forbids a sandbox that names no attribute to every request', () => {
    for (const attributes of [
      { user: undefined, indices: [] },
      { user: 'bob', indices: ['spam'] },
      { user: 'dash_a', indices: [] },
    ]) {
      const error = forbidden(() => c.resolveExplicit('open', attributes));
      expect(error.message).toMatch(/^request may not use sandbox "open": it names no selection attributes/);
    }
  });

  it('honours a matching sandbox even where a more specific one would win classification', () => {
    const nested = classifier(
      sandbox('ops', 5, { user: ['ops_*'] }),
      sandbox('ops-logs', 6, { user: ['ops_*'], indices: ['logs-*'] }),
    );
    const attributes = { user: 'ops_1', indices: ['logs-a'] };
    expect(nested.classify(attributes).id).toBe('ops-logs');
    expect(nested.resolveExplicit('ops', attributes).id).toBe('ops');
  });

  it('forbids a sandbox that does not exist', () => {
    const error = forbidden(() => c.resolveExplicit('ghost', { user: 'dash_a', indices: [] }));
    expect(error.code).toBe(ErrorCode.SANDBOX_FORBIDDEN);
    expect(error.sandboxId).toBe('ghost');
    expect(error.message).toBe('sandbox "ghost" does not exist');
  });

  it('forbids a user that does not match, naming the attribute and the value', () => {
    const error = forbidden(() => c.resolveExplicit('dash', { user: 'bob', indices: [] }));
    expect(error.sandboxId).toBe('dash');
    expect(error.message).toBe(
      'request may not use sandbox "dash": user "bob" does not match userPattern ["dash_*"]',
    );
  });

  it('forbids an anonymous request for a sandbox that names users', () => {
    expect(forbidden(() => c.resolveExplicit('dash', { user: undefined, indices: [] })).message).toBe(
      'request may not use sandbox "dash": it requires a user matching userPattern ["dash_*"]; the request has no user',
    );
  });

  it('forbids a request with an index outside the pattern, naming the index', () => {
    expect(
      forbidden(() => c.resolveExplicit('logs', { user: 'ops_1', indices: ['logs-a', 'spam'] })).message,
    ).toBe('request may not use sandbox "logs": index "spam" does not match indicesPattern ["logs-*"]');
    expect(forbidden(() => c.resolveExplicit('logs', { user: 'ops_1', indices: [] })).message).toBe(
      'request may not use sandbox "logs": it requires indices matching indicesPattern ["logs-*"]; the request names none',
    );
  });
});

describe('SandboxClassifier index', () => {
  /** The rules of the class comment, checked against every sandbox (what the index must reproduce). */
  function bruteForce(
    entries: Record<string, unknown>[],
    user: string | undefined,
    indices: string[],
  ): string {
    const wild = (p: string, v: string) =>
      new RegExp(
        `^${p
          .split('*')
          .map((x) => x.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
          .join('.*')}$`,
      ).test(v);
    const head = (p: string) => p.split('*')[0]!.length;
    let best: { id: string; score: number; priority: number } | undefined;
    for (const e of entries) {
      const attrs = e['selectionAttributes'] as { name: string; value: string[] }[];
      const users = attrs.find((a) => a.name === 'userPattern')?.value;
      const idx = attrs.find((a) => a.name === 'indicesPattern')?.value;
      if (users === undefined && idx === undefined) continue;
      let score = 0;
      if (users !== undefined) {
        const m = user === undefined ? [] : users.filter((p) => wild(p, user)).map(head);
        if (m.length === 0) continue;
        score += Math.max(...m);
      }
      if (idx !== undefined) {
        if (indices.length === 0) continue;
        const per = indices.map((i) => idx.filter((p) => wild(p, i)).map(head));
        if (per.some((m) => m.length === 0)) continue;
        score += Math.min(...per.map((m) => Math.max(...m)));
      }
      const id = e['name'] as string;
      const priority = e['priority'] as number;
      if (
        best === undefined ||
        score > best.score ||
        (score === best.score && (priority > best.priority || (priority === best.priority && id < best.id)))
      )
        best = { id, score, priority };
    }
    return best?.id ?? ROOT_SANDBOX_ID;
  }

  it('classifies exactly as a scan of every sandbox, for random sandboxes and requests', () => {
    let seed = 7;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const alphabet = ['a', 'b', 'ab', 'ba', 'x'];
    const pattern = () => {
      const parts = Array.from({ length: 1 + rnd(3) }, () => alphabet[rnd(alphabet.length)]!);
      return parts.join(rnd(2) === 0 ? '*' : '') + (rnd(3) === 0 ? '*' : '');
    };
    const value = () => Array.from({ length: rnd(5) }, () => alphabet[rnd(alphabet.length)]!).join('');
    for (let round = 0; round < 30; round++) {
      const seen = new Set<string>();
      const entries: Record<string, unknown>[] = [];
      for (let i = 0; i < 40; i++) {
        const attrs: Attributes = {};
        if (rnd(3) !== 0) attrs.user = Array.from({ length: 1 + rnd(2) }, pattern);
        if (rnd(2) === 0 || attrs.user === undefined)
          attrs.indices = Array.from({ length: 1 + rnd(2) }, pattern);
        const key = JSON.stringify(attrs);
        if (seen.has(key)) continue;
        seen.add(key);
        entries.push(sandbox(`s${i}`, rnd(4) === 0 ? 100 + i : i, attrs));
      }
      const c = classifier(...entries);
      for (let q = 0; q < 200; q++) {
        const user = rnd(5) === 0 ? undefined : value();
        const indices = Array.from({ length: rnd(3) }, value);
        expect(classify(c, user, indices)).toBe(bruteForce(entries, user, indices));
      }
    }
  });
});
