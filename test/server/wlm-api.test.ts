import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { buildHttpServer } from '../../src/server/http-server.js';

const echoEngine = fileURLToPath(new URL('../fixtures/echo-engine.mjs', import.meta.url));
const token = 'test-admin-token-0123456789';

describe('the _wlm API over the sandboxes', () => {
  let runtime: Runtime;
  let app: FastifyInstance;
  beforeAll(async () => {
    runtime = await createRuntime({
      engine: echoEngine,
      threads: 1,
      lanes: false,
      nodeId: 'n1',
      maxSandboxes: 20,
    });
    app = buildHttpServer(runtime, { adminToken: token });
  });
  afterAll(async () => {
    await app.close();
    await runtime.close();
  });

  const call = (
    method: 'GET' | 'PUT' | 'POST' | 'DELETE',
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) =>
    app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });

  it("creates a group in OpenSearch's body, answers it in OpenSearch's shape, and it is the same sandbox in /_sandbox", async () => {
    const created = await call('PUT', '/_wlm/workload_group', {
      name: 'analytics',
      resiliency_mode: 'enforced',
      resource_limits: { cpu: 0.4, memory: 0.2 },
      settings: { 'search.default_search_timeout': '30s', 'search.cancel_after_time_interval': '1m' },
      throttling: { node_limit: 10 },
    });
    expect(created.statusCode).toBe(200);
    const group = created.json();
    expect(group).toMatchObject({
      _id: expect.any(String),
      name: 'analytics',
      resiliency_mode: 'enforced',
      resource_limits: { cpu: 0.4, memory: 0.2 },
      settings: { 'search.default_search_timeout': '30s', 'search.cancel_after_time_interval': '1m' },
      throttling: { node_limit: 10 },
      updated_at: expect.any(Number),
    });
    // One store: the sandbox has the group's limits (rejects at 0.8 L, cancels at 0.9 L), settings and cap.
    const sandbox = (await call('GET', `/_sandbox/${group._id}`)).json()[group._id];
    expect(sandbox).toMatchObject({
      name: 'analytics',
      mode: 'enforced',
      resourceConsumptionLimits: { cpu: { low: 0.32, high: 0.36 }, memory: { low: 0.16, high: 0.18 } },
      search_settings: { timeout: '30s', cancel_after_time_interval: '1m' },
      max_concurrent_tasks: 10,
    });
    // Default priority: the root's (0), free among its children.
    expect(sandbox.priority).toBe(0);
    const listed = (await call('GET', '/_wlm/workload_group')).json();
    expect(listed.workload_groups.map((g: { name: string }) => g.name)).toEqual(['analytics']);
    expect((await call('GET', '/_wlm/workload_group/analytics')).json().workload_groups[0]._id).toBe(
      group._id,
    );
  });

  it('updates only what the body names; null clears one setting, {} clears them all; mode words any case', async () => {
    const updated = await call('PUT', '/_wlm/workload_group/analytics', {
      resiliency_mode: 'MONITOR',
      resource_limits: { cpu: 0.5 },
      settings: {
        'search.default_search_timeout': null,
        search: { max_concurrent_shard_requests: '3' },
        override_request_values: 'true',
      },
    });
    expect(updated.statusCode).toBe(200);
    expect(updated.json()).toMatchObject({
      resiliency_mode: 'monitor',
      resource_limits: { cpu: 0.5, memory: 0.2 },
      settings: {
        'search.cancel_after_time_interval': '1m',
        'search.max_concurrent_shard_requests': '3',
        override_request_values: 'true',
      },
    });
    expect(updated.json().settings).not.toHaveProperty('search.default_search_timeout');
    const id = updated.json()._id;
    expect(runtime.sandboxRegistry.get(id)).toMatchObject({
      mode: 'monitor',
      searchSettings: { maxConcurrentShardRequests: 3, overrideRequestValues: true },
    });
    const cleared = await call('POST', '/_wlm/workload_group/analytics', {
      settings: {},
      throttling: { node_limit: 2, by: 'username' },
    });
    expect(cleared.json().settings).toEqual({});
    expect(cleared.json().throttling).toEqual({ node_limit: 2, by: 'username' });
    expect(runtime.sandboxRegistry.get(id)).toMatchObject({
      maxConcurrentTasks: undefined,
      maxConcurrentTasksPerUser: 2,
    });
  });

  it('refuses bad bodies with 400 naming the field and the value, and what it cannot honour', async () => {
    const cases: Array<[unknown, string]> = [
      [{ name: 'x', resiliency_mode: 'enforced' }, 'resource_limits is required'],
      [
        { name: 'x', resiliency_mode: 'strict', resource_limits: { cpu: 0.1 } },
        'resiliency_mode must be one of enforced, soft, monitor; received "strict"',
      ],
      [
        { name: 'x', resiliency_mode: 'soft', resource_limits: { cpu: 1.5 } },
        'resource_limits.cpu must be a ratio greater than 0 and at most 1; received 1.5',
      ],
      [
        { name: 'x', resiliency_mode: 'soft', resource_limits: { disk: 0.1 } },
        'resource_limits.disk is not a resource',
      ],
      [
        {
          name: 'x',
          resiliency_mode: 'soft',
          resource_limits: { cpu: 0.1 },
          settings: { 'search.max_buckets': 100 },
        },
        'settings.search.max_buckets is not supported here',
      ],
      // Refusals name the field as the client sent it, not its /_sandbox name.
      [
        {
          name: 'x',
          resiliency_mode: 'soft',
          resource_limits: { cpu: 0.1 },
          settings: { 'search.default_search_timeout': '5 parsecs' },
        },
        'settings.search.default_search_timeout must be a time value with a unit (nanos, micros, ms, s, m, h, d), or -1 to disable (unit is missing or unrecognized); received "5 parsecs"',
      ],
      [
        {
          name: 'x',
          resiliency_mode: 'soft',
          resource_limits: { cpu: 0.1 },
          settings: { search: { max_concurrent_shard_requests: '0' } },
        },
        'settings.search.max_concurrent_shard_requests must be an integer in 1..65536; received "0"',
      ],
      [
        {
          name: 'x',
          resiliency_mode: 'soft',
          resource_limits: { cpu: 0.1 },
          settings: { override_request_values: 'yes' },
        },
        'settings.override_request_values must be true or false; received "yes"',
      ],
      [
        {
          name: 'x',
          resiliency_mode: 'soft',
          resource_limits: { cpu: 0.1 },
          search_settings: { timeout: '0s' },
        },
        'search_settings.timeout must be a positive time value',
      ],
      [
        { name: 'x', resiliency_mode: 'soft', resource_limits: { cpu: 0.1 }, throttling: { node_limit: 0 } },
        'throttling.node_limit must be an integer in 1..100000 (tasks running at once); received 0',
      ],
      [
        {
          name: 'x',
          resiliency_mode: 'soft',
          resource_limits: { cpu: 0.1 },
          throttling: { node_limit: '2', by: 'username' },
        },
        'throttling.node_limit must be an integer in 1..100000 (tasks running at once); received "2"',
      ],
      [
        {
          name: 'x',
          resiliency_mode: 'soft',
          resource_limits: { cpu: 0.1 },
          throttling: { node_limit: 3, by: 'role' },
        },
        'throttling.by cannot be role here',
      ],
      [
        { name: 'x', resiliency_mode: 'soft', resource_limits: { cpu: 0.1 }, _id: 'mine' },
        '_id is set by the server',
      ],
    ];
    for (const [body, reason] of cases) {
      const r = await call('PUT', '/_wlm/workload_group', body);
      expect(r.statusCode, JSON.stringify(body)).toBe(400);
      expect(r.json().error.reason).toContain(reason);
    }
    expect((await call('PUT', '/_wlm/workload_group/nope', { resiliency_mode: 'soft' })).statusCode).toBe(
      404,
    );
    expect(runtime.sandboxes().map((s) => s.name)).toEqual(['_root', 'analytics']);
  });

  it('needs the admin token for changes, not for reads', async () => {
    const anonymous = await app.inject({
      method: 'PUT',
      url: '/_wlm/workload_group',
      payload: { name: 'y' },
    });
    expect(anonymous.statusCode).toBe(401);
    expect((await app.inject({ method: 'DELETE', url: '/_wlm/workload_group/analytics' })).statusCode).toBe(
      401,
    );
    expect((await app.inject({ method: 'GET', url: '/_wlm/workload_group' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/_wlm/stats' })).statusCode).toBe(200);
  });

  it("answers _wlm/stats in OpenSearch's node-keyed shape, filtered by node and group", async () => {
    const id = runtime.sandboxes().find((s) => s.name === 'analytics')!.id;
    await runtime.search({ index: 'alpha', body: { echo: 1 }, sandboxId: undefined });
    const all = (await call('GET', '/_wlm/stats')).json();
    expect(all._nodes).toEqual({ total: 1, successful: 1, failed: 0 });
    expect(Object.keys(all.n1.workload_groups).sort()).toEqual(['DEFAULT_WORKLOAD_GROUP', id].sort());
    expect(all.n1.workload_groups.DEFAULT_WORKLOAD_GROUP).toMatchObject({
      total_completions: 1,
      total_rejections: 0,
      total_cancellations: 0,
      cpu: { current_usage: expect.any(Number), cancellations: 0, rejections: 0 },
      memory: { current_usage: expect.any(Number), cancellations: 0, rejections: 0 },
      max_running: 1,
      waiting_for_cap: 0,
    });
    const node = (await call('GET', '/_wlm/n1/stats')).json();
    expect(Object.keys(node.n1.workload_groups)).toHaveLength(2);
    const other = (await call('GET', '/_wlm/n2/stats')).json();
    expect(other._nodes.total).toBe(0);
    expect(other).not.toHaveProperty('n1');
    const one = (await call('GET', `/_wlm/stats/${id}`)).json();
    expect(Object.keys(one.n1.workload_groups)).toEqual([id]);
    const both = (await call('GET', `/_wlm/_local/stats/${id},DEFAULT_WORKLOAD_GROUP`)).json();
    expect(Object.keys(both.n1.workload_groups)).toHaveLength(2);
    expect(Object.keys((await call('GET', '/_wlm/stats?breach=true')).json().n1.workload_groups)).toEqual([]);
    expect((await call('GET', '/_wlm/stats?breach=maybe')).statusCode).toBe(400);
  });

  it('answers 404 resource_not_found_exception for a workload group id that does not exist, as OpenSearch', async () => {
    for (const url of [
      '/_wlm/stats/nope',
      '/_wlm/_local/stats/DEFAULT_WORKLOAD_GROUP,nope',
      '/_list/wlm_stats/stats/nope',
    ]) {
      const r = await call('GET', url);
      expect(r.statusCode, url).toBe(404);
      expect(r.json().error).toMatchObject({
        type: 'resource_not_found_exception',
        reason: 'WorkloadGroup with id nope does not exist',
      });
    }
    expect((await call('GET', '/_wlm/stats/DEFAULT_WORKLOAD_GROUP')).statusCode).toBe(200);
  });

  it('pages _list/wlm_stats with a token, sorts and orders, and refuses a token outdated by a change', async () => {
    for (const name of ['g-b', 'g-a']) {
      const r = await call('PUT', '/_wlm/workload_group', {
        name,
        resiliency_mode: 'soft',
        resource_limits: { cpu: 0.1 },
      });
      expect(r.statusCode).toBe(200);
    }
    const idOf = (name: string) => runtime.sandboxes().find((s) => s.name === name)!.id;
    const expected = ['DEFAULT_WORKLOAD_GROUP', idOf('analytics'), idOf('g-a'), idOf('g-b')].sort();
    const first = await call('GET', '/_list/wlm_stats?size=3&sort=workload_group&format=json');
    expect(first.statusCode).toBe(200);
    const page1 = first.json();
    expect(page1.wlm_stats.map((r: { WORKLOAD_GROUP_ID: string }) => r.WORKLOAD_GROUP_ID)).toEqual(
      expected.slice(0, 3),
    );
    expect(page1.wlm_stats[0]).toMatchObject({
      NODE_ID: 'n1',
      TOTAL_COMPLETIONS: expect.any(String),
      CPU_USAGE: expect.any(String),
    });
    expect(typeof page1.next_token).toBe('string');
    const page2 = (
      await call(
        'GET',
        `/_list/wlm_stats?size=3&sort=workload_group&format=json&next_token=${encodeURIComponent(page1.next_token)}`,
      )
    ).json();
    expect(page2.wlm_stats.map((r: { WORKLOAD_GROUP_ID: string }) => r.WORKLOAD_GROUP_ID)).toEqual(
      expected.slice(3),
    );
    expect(page2.next_token).toBeNull();
    const desc = (await call('GET', '/_list/wlm_stats?sort=workload_group&order=desc&format=json')).json();
    expect(desc.wlm_stats.map((r: { WORKLOAD_GROUP_ID: string }) => r.WORKLOAD_GROUP_ID)).toEqual(
      [...expected].reverse(),
    );
    // Text: a header line with v, `|` between columns, the token line, then the last page's footer.
    const text = await call('GET', '/_list/wlm_stats?size=2&v=true');
    expect(text.headers['content-type']).toContain('text/plain');
    const lines = text.body.trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^NODE_ID +\| WORKLOAD_GROUP_ID +\| TOTAL_COMPLETIONS \| TOTAL_REJECTIONS \| TOTAL_CANCELLATIONS \| CPU_USAGE +\| MEMORY_USAGE$/,
    );
    expect(lines).toHaveLength(4);
    expect(lines[3]).toMatch(/^next_token \S+$/);
    const last = await call(
      'GET',
      `/_list/wlm_stats?size=2&next_token=${encodeURIComponent(lines[3]!.split(' ')[1]!)}`,
    );
    expect(last.body).toContain('No more pages available');
    // A change to the set of groups invalidates the token.
    await call('DELETE', '/_wlm/workload_group/g-b');
    const stale = await call(
      'GET',
      `/_list/wlm_stats?size=3&sort=workload_group&next_token=${encodeURIComponent(page1.next_token)}`,
    );
    expect(stale.statusCode).toBe(400);
    expect(stale.json().error.reason).toContain('next_token is outdated');
    for (const [query, reason] of [
      ['size=0', 'size must be an integer in 1..100'],
      ['size=101', 'size must be an integer in 1..100'],
      ['sort=name', "sort must be 'node_id' or 'workload_group'"],
      ['order=up', "order must be 'asc' or 'desc'"],
      ['next_token=bm9wZQ==', 'next_token is not a pagination token'],
    ] as const) {
      const r = await call('GET', `/_list/wlm_stats?${query}`);
      expect(r.statusCode, query).toBe(400);
      expect(r.json().error.reason).toContain(reason);
    }
  });

  it('takes the workloadGroupId header as the explicit sandbox, under the same rule as x-sandbox-id', async () => {
    const id = runtime.sandboxes().find((s) => s.name === 'analytics')!.id;
    const viaHeader = await call('POST', '/alpha/_search', { echo: 'wg' }, { workloadGroupId: id });
    const viaSandbox = await call('POST', '/alpha/_search', { echo: 'wg' }, { 'x-sandbox-id': id });
    // The same answer either way (whatever the rule decides for a sandbox without attributes).
    expect(viaHeader.statusCode).toBe(viaSandbox.statusCode);
    expect(viaHeader.json()).toEqual(viaSandbox.json());
    const unknown = await call('POST', '/alpha/_search', {}, { workloadGroupId: 'no-such-group' });
    const unknownSandbox = await call('POST', '/alpha/_search', {}, { 'x-sandbox-id': 'no-such-group' });
    expect(unknown.statusCode).toBe(unknownSandbox.statusCode);
    expect(unknown.statusCode).toBeGreaterThanOrEqual(400);
    const clash = await call('POST', '/alpha/_search', {}, { workloadGroupId: id, 'x-sandbox-id': '_root' });
    expect(clash.statusCode).toBe(400);
    expect(clash.json().error.reason).toContain(
      'workloadGroupId must name the same sandbox as the x-sandbox-id header',
    );
  });

  it('deletes a group by name; it is gone from /_sandbox too', async () => {
    const id = runtime.sandboxes().find((s) => s.name === 'analytics')!.id;
    const r = await call('DELETE', '/_wlm/workload_group/analytics');
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({ acknowledged: true });
    expect((await call('GET', `/_sandbox/${id}`)).statusCode).toBe(404);
    expect((await call('GET', '/_wlm/workload_group/analytics')).statusCode).toBe(404);
  });
});
