/**
 * The bad-input table: many distinct bad requests over real HTTP (a single node's server on a free
 * loopback port, in this process, over the built-in engine with a slice of the corpus), across every
 * route: search, sandboxes, query priority, the index API, bulk, documents, `_cat`, headers and auth.
 *
 * For each case: the status is the one expected (a 4xx), the error body names the field and the value
 * received, the answer comes within 10 s (no hang), and the server still answers a search afterwards
 * (no crash). The last test prints the totals. To add a route, add rows to `CASES` (or a family of
 * them); the table needs nothing else. `DEBUG_BAD=1` prints every answer's status and reason.
 */
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { buildHttpServer } from '../../src/server/http-server.js';

const ADMIN = 'bad-input-admin-token-0000';
const WRITER = 'bad-input-writer-token-000';
const SANDBOXES = fileURLToPath(new URL('../../config/sandboxes.json', import.meta.url));
const CASE_TIMEOUT_MS = 10_000;
/** Stands for the server-made `_id` of the sandbox `grouping` (no selection attributes), made in beforeAll. */
const GROUPING = '<grouping-id>';

type Method = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE';
type Credential = 'admin' | 'writer' | 'none' | 'wrong';

/** One bad request and what its answer must say. */
interface BadInput {
  /** The route family, for the report. */
  readonly route: string;
  readonly name: string;
  readonly method: Method;
  readonly url: string;
  /** A string is sent as it is; anything else as JSON. */
  readonly body?: unknown;
  /** A list is sent as that many header lines. */
  readonly headers?: Readonly<Record<string, string | readonly string[]>>;
  /** @default 'admin' (every case but the auth ones is about the input, not the token) */
  readonly as?: Credential;
  readonly status: number;
  /** Text the error reason must contain that names the field (a path, a parameter, a header). */
  readonly field: string;
  /** Text the error reason must contain that shows the value received. */
  readonly received: string;
}

const TOKENS: Record<Credential, string | undefined> = {
  admin: ADMIN,
  writer: WRITER,
  none: undefined,
  wrong: 'not-a-token-of-this-server-0',
};

const ndjson = (...lines: unknown[]) =>
  `${lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n')}\n`;

// ---------------------------------------------------------------------------------------------------
// search
const SEARCH: BadInput[] = [
  ...(
    [
      [{ size: -1 }, '[size]', '-1'],
      [{ size: 10001 }, '[size]', '10001'],
      [{ size: 1.5 }, '[size]', '1.5'],
      [{ size: '10' }, '[size]', '"10"'],
      [{ size: true }, '[size]', 'true'],
      [{ size: null }, '[size]', 'null'],
      [{ from: -3 }, '[from]', '-3'],
      [{ from: 'x' }, '[from]', '"x"'],
      [{ from: [1] }, '[from]', '[1]'],
      [{ query: 'money' }, 'query', '"money"'],
      [{ query: [] }, 'query', '[]'],
      [{ query: { match: { body: [7] } } }, '[match]', '[7]'],
      [{ query: { match: { nofield: 'x' } } }, 'nofield', 'nofield'],
      [{ query: { match: { body: { query: 'a', fuzziness: 9 } } } }, 'fuzziness', '9'],
      [{ query: { match: { body: { query: 'a', operator: 'xor' } } } }, 'operator', '"xor"'],
      [{ query: { prefix: { subject: '' } } }, '[prefix]', '""'],
      [{ query: { multi_match: { query: 'a', fields: [] } } }, '[fields]', '[]'],
      [{ query: { multi_match: { query: 'a', fields: 'body' } } }, '[fields]', '"body"'],
      [{ query: { range: { date: { gte: 'yesterday' } } } }, '[range]', '"yesterday"'],
      [{ query: { range: { date: { gt: 1, gte: 2 } } } }, 'gte and gt', '{"gt":1,"gte":2}'],
      [{ query: { range: { date: {} } } }, '[range]', '{}'],
      [{ query: { range: { date: { gte: 'now-1x' } } } }, 'now-1x', '"now-1x"'],
      [{ query: { bool: { must: 'x' } } }, '[must]', '"x"'],
      [{ query: { bool: { should: [1] } } }, 'should', '1'],
      [{ query: { match_all: { boost: 2 } } }, '[match_all]', '[boost]'],
      [{ query: { nosuch: {} } }, 'nosuch', 'nosuch'],
      [{ sort: [{ date: { order: 'sideways' } }] }, 'order', 'sideways'],
      ['{"size":1e309}', 'size', '1e309'],
      ['{"from":-1e400}', 'from', '-1e400'],
      ['{"query":{"range":{"date":{"gt":9e999}}}}', 'query.range.date.gt', '9e999'],
      ['[1,2]', 'body', '[1,2]'],
      ['"just a string"', 'body', '"just a string"'],
      ['42', 'body', '42'],
    ] as const
  ).map(([body, field, received], i) => ({
    route: 'search',
    name: `body ${i + 1}: ${typeof body === 'string' ? body : JSON.stringify(body)}`.slice(0, 90),
    method: 'POST' as const,
    url: '/_all/_search',
    body,
    status: 400,
    field,
    received,
  })),
  {
    route: 'search',
    name: 'from + size over the window',
    method: 'POST',
    url: '/_search',
    body: { from: 9995, size: 10 },
    status: 400,
    field: 'from + size',
    received: '10005',
  },
  {
    route: 'search',
    name: 'a body that is not JSON',
    method: 'POST',
    url: '/_search',
    body: '{"query": {',
    status: 400,
    field: 'request body is not valid JSON',
    received: 'JSON',
  },
  {
    route: 'search',
    name: 'an unknown URL parameter',
    method: 'GET',
    url: '/_search?frobnicate=3',
    status: 400,
    field: 'url parameter [frobnicate]',
    received: '"3"',
  },
  {
    route: 'search',
    name: 'a URL size that is not a number',
    method: 'GET',
    url: '/_search?size=three',
    status: 400,
    field: 'size',
    received: 'three',
  },
  {
    route: 'search',
    name: 'an unknown index',
    method: 'POST',
    url: '/nope-1/_search',
    body: {},
    status: 404,
    field: 'index',
    received: 'nope-1',
  },
  {
    route: 'search',
    name: 'a bad percent-encoding',
    method: 'POST',
    url: '/spam%ZZ/_search',
    body: {},
    status: 400,
    field: 'url',
    received: 'spam%ZZ',
  },
  {
    route: 'search',
    name: 'an index list too long',
    method: 'POST',
    url: `/${Array.from({ length: 1200 }, (_, i) => `i${i}`).join(',')}/_search`,
    body: {},
    status: 400,
    field: 'url',
    received: 'i0,i1,i2',
  },
  {
    route: 'search',
    name: 'an exclusion only',
    method: 'POST',
    url: '/-spam-1/_search',
    body: {},
    status: 404,
    field: 'index',
    received: '-spam-1',
  },
];

// ---------------------------------------------------------------------------------------------------
// sandboxes
const sandboxBody = (extra: Record<string, unknown>) => ({ name: 'bad', priority: 3, ...extra });
const SANDBOX: BadInput[] = [
  ...(
    [
      [sandboxBody({ priority: 'high' }), 'priority', '"high"'],
      [sandboxBody({ priority: 1.5 }), 'priority', '1.5'],
      [sandboxBody({ name: '' }), 'name', '""'],
      [sandboxBody({ name: 'a b' }), 'name', '"a b"'],
      [sandboxBody({ name: 'x'.repeat(51) }), 'name', 'xxxxxxxx'],
      [sandboxBody({ name: 7 }), 'name', '7'],
      [sandboxBody({ _id: 'mine' }), '_id', '"mine"'],
      [sandboxBody({ mode: 'strict' }), 'mode', '"strict"'],
      [
        sandboxBody({ resourceConsumptionLimits: { cpu: { high: 1.5 } } }),
        'resourceConsumptionLimits.cpu.high',
        '1.5',
      ],
      [
        sandboxBody({ resourceConsumptionLimits: { cpu: { low: 0.9, high: 0.5 } } }),
        'resourceConsumptionLimits.cpu',
        '0.9',
      ],
      [sandboxBody({ resourceConsumptionLimits: { cpuUsageLimit: '150' } }), 'cpuUsageLimit', '"150"'],
      [sandboxBody({ resourceConsumptionLimits: { disk: { high: 0.5 } } }), 'disk', 'disk'],
      [sandboxBody({ resourceConsumptionLimits: 'lots' }), 'resourceConsumptionLimits', '"lots"'],
      [sandboxBody({ selectionAttributes: 'dash_*' }), 'selectionAttributes', '"dash_*"'],
      [
        sandboxBody({ selectionAttributes: [{ name: 'hostPattern', value: 'h*' }] }),
        'selectionAttributes[0].name',
        '"hostPattern"',
      ],
      [
        sandboxBody({ selectionAttributes: [{ name: 'userPattern', value: '' }] }),
        'selectionAttributes[0].value',
        '""',
      ],
      [
        sandboxBody({ selectionAttributes: [{ name: 'userPattern', value: 'u'.repeat(101) }] }),
        'selectionAttributes[0].value',
        'uuuuuuuu',
      ],
      [
        sandboxBody({ selectionAttributes: [{ name: 'userPattern' }] }),
        'selectionAttributes[0].value',
        'undefined',
      ],
      [sandboxBody({ tags: 'x' }), 'tags', '"x"'],
      [sandboxBody({ tags: [1] }), 'tags[0]', 'received 1'],
      [sandboxBody({ parent_id: 'ghost' }), 'parent_id', '"ghost"'],
      [sandboxBody({ colour: 'red' }), 'colour', '"red"'],
      [[1], 'body', '[1]'],
      ['{"name":"b","priority":1e400}', 'priority', '1e400'],
    ] as const
  ).map(([body, field, received], i) => ({
    route: 'sandbox',
    name: `create ${i + 1}: ${JSON.stringify(body)}`.slice(0, 90),
    method: 'PUT' as const,
    url: '/_sandbox',
    body,
    status: 400,
    field,
    received,
  })),
  {
    route: 'sandbox',
    name: 'an update of a missing sandbox',
    method: 'PUT',
    url: '/_sandbox/ghost',
    body: { priority: 1 },
    status: 404,
    field: '_id',
    received: 'ghost',
  },
  {
    route: 'sandbox',
    name: 'an update with a bad priority',
    method: 'PUT',
    url: '/_sandbox/dashboards',
    body: { priority: 'top' },
    status: 400,
    field: 'priority',
    received: '"top"',
  },
  {
    route: 'sandbox',
    name: 'an update naming the server-set version',
    method: 'PUT',
    url: '/_sandbox/dashboards',
    body: { version: 9 },
    status: 400,
    field: 'version',
    received: '9',
  },
  {
    route: 'sandbox',
    name: 'a delete of the root',
    method: 'DELETE',
    url: '/_sandbox/_root',
    status: 400,
    field: '_id',
    received: '"_root"',
  },
  {
    route: 'sandbox',
    name: 'a delete of a missing sandbox',
    method: 'DELETE',
    url: '/_sandbox/ghost',
    status: 404,
    field: '_id',
    received: 'ghost',
  },
  {
    route: 'sandbox',
    name: 'a GET of a missing sandbox',
    method: 'GET',
    url: '/_sandbox/ghost',
    status: 404,
    field: '_id',
    received: 'ghost',
  },
  {
    route: 'sandbox',
    name: 'stats with breach=maybe',
    method: 'GET',
    url: '/_sandbox/_stats?breach=maybe',
    status: 400,
    field: 'breach',
    received: '"maybe"',
  },
  {
    route: 'sandbox',
    name: 'stats with size=0',
    method: 'GET',
    url: '/_sandbox/_stats?size=0',
    status: 400,
    field: 'size',
    received: '"0"',
  },
  {
    route: 'sandbox',
    name: 'stats with from=-1',
    method: 'GET',
    url: '/_sandbox/_stats?from=-1',
    status: 400,
    field: 'from',
    received: '"-1"',
  },
  {
    route: 'sandbox',
    name: 'stats with size=1e3',
    method: 'GET',
    url: '/_sandbox/_stats?size=1e3',
    status: 400,
    field: 'size',
    received: '"1e3"',
  },
  {
    route: 'sandbox',
    name: 'stats with an unknown parameter',
    method: 'GET',
    url: '/_sandbox/_stats?sort=cpu',
    status: 400,
    field: 'url parameter [sort]',
    received: '"cpu"',
  },
];

// ---------------------------------------------------------------------------------------------------
// explicit sandbox choice and other headers
const search = (
  headers: Record<string, string | readonly string[]>,
  url = '/_all/_search',
): Pick<BadInput, 'method' | 'url' | 'body' | 'headers'> => ({
  method: 'POST',
  url,
  body: { query: { prefix: { body: 'a' } }, size: 100 },
  headers,
});
const HEADERS: BadInput[] = [
  {
    route: 'headers',
    name: 'x-sandbox-id _root for an analyst (the repro)',
    ...search({ 'x-user': 'analyst_eve', 'x-sandbox-id': '_root' }),
    status: 403,
    field: 'sandbox "_root"',
    received: 'sandbox "analysts"',
  },
  {
    route: 'headers',
    name: 'x-sandbox-id of a sandbox without attributes',
    ...search({ 'x-user': 'alice', 'x-sandbox-id': GROUPING }),
    status: 403,
    field: `sandbox "${GROUPING}"`,
    received: 'names no selection attributes',
  },
  {
    route: 'headers',
    name: 'x-sandbox-id of a sandbox without attributes, for an analyst',
    ...search({ 'x-user': 'analyst_eve', 'x-sandbox-id': GROUPING }),
    status: 403,
    field: `sandbox "${GROUPING}"`,
    received: 'sandbox "analysts"',
  },
  {
    route: 'headers',
    name: 'x-sandbox-id of another user group',
    ...search({ 'x-user': 'analyst_eve', 'x-sandbox-id': 'dashboards' }),
    status: 403,
    field: 'userPattern ["dash_*"]',
    received: 'user "analyst_eve"',
  },
  {
    route: 'headers',
    name: 'x-sandbox-id without a user',
    ...search({ 'x-sandbox-id': 'dashboards' }),
    status: 403,
    field: 'userPattern ["dash_*"]',
    received: 'the request has no user',
  },
  {
    route: 'headers',
    name: 'x-sandbox-id sent twice',
    ...search({ 'x-user': 'dash_ops', 'x-sandbox-id': ['dashboards', 'ghost'] }),
    status: 400,
    field: 'header [x-sandbox-id]',
    received: '["dashboards","ghost"]',
  },
  {
    route: 'headers',
    name: 'workloadGroupId sent twice',
    ...search({ 'x-user': 'dash_ops', workloadGroupId: ['dashboards', 'dashboards'] }),
    status: 400,
    field: 'header [workloadgroupid]',
    received: '["dashboards","dashboards"]',
  },
  {
    route: 'headers',
    name: 'x-sandbox-id of a missing sandbox',
    ...search({ 'x-user': 'dash_ops', 'x-sandbox-id': 'ghost' }),
    status: 403,
    field: 'sandbox "ghost"',
    received: 'does not exist',
  },
  {
    route: 'headers',
    name: 'x-sandbox-id empty',
    ...search({ 'x-user': 'dash_ops', 'x-sandbox-id': '' }),
    status: 403,
    field: 'sandbox ""',
    received: 'does not exist',
  },
  // Not entity tags: 400. Tags that can never match (weak ones, ones that are not versions): 409.
  ...(
    [
      ['1', 400],
      ['W/"1"', 409],
      ['"abc"', 409],
      ['""', 409],
      ['"1", 2', 400],
      ['W/"1", W/"2"', 409],
      ['"1"x', 400],
      [',', 400],
      ['**', 400],
    ] as const
  ).map(
    ([ifMatch, status]): BadInput => ({
      route: 'headers',
      name: `If-Match ${ifMatch}`,
      method: 'PUT',
      url: '/_sandbox/dashboards',
      body: { priority: 21 },
      headers: { 'if-match': ifMatch },
      status,
      field: 'If-Match',
      received: JSON.stringify(ifMatch),
    }),
  ),
  {
    route: 'headers',
    name: 'If-Match on a delete, weak',
    method: 'DELETE',
    url: '/_sandbox/dashboards',
    headers: { 'if-match': 'W/"1"' },
    status: 409,
    field: 'If-Match',
    received: '"W/\\"1\\""',
  },
  {
    route: 'headers',
    name: 'If-Match on a delete, unquoted',
    method: 'DELETE',
    url: '/_sandbox/dashboards',
    headers: { 'if-match': '1' },
    status: 400,
    field: 'If-Match',
    received: '"1"',
  },
];
// ---------------------------------------------------------------------------------------------------
// query priority
const QUERY_PRIORITY: BadInput[] = (
  [
    [{ enabled: 'yes' }, 'enabled', '"yes"'],
    [{ default_priority: 'x' }, 'default_priority', '"x"'],
    [{ default_priority: 1.5 }, 'default_priority', '1.5'],
    [{ aging_ms_per_priority: -1 }, 'aging_ms_per_priority', '-1'],
    [{ max_queued_per_sandbox: 0 }, 'max_queued_per_sandbox', '0'],
    [{ sandbox_queue_limits: { analysts: 'x' } }, 'sandbox_queue_limits.analysts', '"x"'],
    [{ priorities: 'x' }, 'priorities', '"x"'],
    [{ priorities: [{ priority: 'hi' }] }, 'priorities[0].priority', '"hi"'],
    [{ priorities: [{ priority: 1, query_attributes: {} }] }, 'priorities[0].query_attributes', '{}'],
    [
      { priorities: [{ priority: 1, query_attributes: [{ regex: '(' }] }] },
      'priorities[0].query_attributes[0].regex',
      '"("',
    ],
    [
      { priorities: [{ priority: 1, query_attributes: [{ time_window: { start: 'soon' } }] }] },
      'time_window.start',
      '"soon"',
    ],
    [{ priorities: [{ priority: 1, query_attributes: [{ time_window: {} }] }] }, 'time_window', '{}'],
    [{ priorities: [{ priority: 1, reserved_workers: 5 }] }, 'priorities', 'reserved'],
    [{ priorities: [{ priority: 1, query_attributes: [{ colour: 'red' }] }] }, 'colour', '"red"'],
    [{ frobnicate: 1 }, 'frobnicate', '1'],
    [[], 'body', '[]'],
    ['{"default_priority":1e999}', 'default_priority', '1e999'],
  ] as const
).map(([body, field, received], i) => ({
  route: 'query-priority',
  name: `${i + 1}: ${JSON.stringify(body)}`.slice(0, 90),
  method: 'PUT' as const,
  url: '/_query_priority',
  body,
  status: 400,
  field,
  received,
}));

// ---------------------------------------------------------------------------------------------------
// the index API
const INDEX: BadInput[] = [
  ...(
    [
      ['Logs', 'must be lowercase'],
      ['_logs', "must not start with '_', '-', or '+'"],
      ['-logs', "must not start with '_', '-', or '+'"],
      ['lo*gs', 'must not contain the following characters'],
      ['lo%3Fgs', 'must not contain the following characters'],
      ['lo%23gs', "must not contain '#'"],
      ['lo%3Ags', "must not contain ':'"],
      ['..', "must not be '.' or '..'"],
      ['%2E', "must not be '.' or '..'"],
      ['a%2Fb', 'must not contain the following characters'],
      ['x'.repeat(256), 'too long'],
    ] as const
  ).map(
    ([name, rule]): BadInput => ({
      route: 'index',
      name: `PUT an index named ${name.slice(0, 20)}`,
      method: 'PUT',
      url: `/${name}`,
      body: {},
      status: 400,
      field: 'index',
      received: rule,
    }),
  ),
  ...(
    [
      [{ settings: { number_of_shards: 0 } }, 'settings.index.number_of_shards', '0'],
      [{ settings: { number_of_shards: 'two' } }, 'settings.index.number_of_shards', '"two"'],
      [{ settings: { number_of_shards: 2000 } }, 'settings.index.number_of_shards', '2000'],
      [{ settings: { number_of_replicas: -1 } }, 'settings.index.number_of_replicas', '-1'],
      [
        { settings: { index: { number_of_shards: 3, number_of_routing_shards: 10 } } },
        'number_of_routing_shards',
        '10',
      ],
      [{ settings: { 'bulk_routing.mode': 'fast' } }, 'settings.index.bulk_routing.mode', '"fast"'],
      [{ settings: { bulk_routing: { enabled: 'yes' } } }, 'settings.index.bulk_routing.enabled', '"yes"'],
      [{ settings: { refresh_interval: '5' } }, 'settings.index.refresh_interval', '"5"'],
      [{ settings: { foo: 1 } }, 'settings.index.foo', 'foo'],
      [{ settings: 'none' }, 'settings', '"none"'],
      [{ setting: {} }, 'setting', 'setting'],
      [{ aliases: { a: {} } }, 'aliases', 'aliases'],
      [{ mappings: 'x' }, 'mappings', '"x"'],
      ['{"settings":{"number_of_shards":1e400}}', 'settings.number_of_shards', '1e400'],
    ] as const
  ).map(
    ([body, field, received], i): BadInput => ({
      route: 'index',
      name: `PUT /v${i} ${JSON.stringify(body)}`.slice(0, 90),
      method: 'PUT',
      url: `/v${i}`,
      body,
      status: 400,
      field,
      received,
    }),
  ),
  {
    route: 'index',
    name: 'PUT a corpus index name',
    method: 'PUT',
    url: '/spam-1',
    body: {},
    status: 400,
    field: 'index',
    received: 'spam-1',
  },
  {
    route: 'index',
    name: 'PUT an index that exists',
    method: 'PUT',
    url: '/logs',
    body: {},
    status: 400,
    field: 'index',
    received: 'logs',
  },
  {
    route: 'index',
    name: 'DELETE a missing index',
    method: 'DELETE',
    url: '/nope',
    status: 404,
    field: 'index',
    received: 'nope',
  },
  {
    route: 'index',
    name: 'DELETE with a wildcard',
    method: 'DELETE',
    url: '/lo*',
    status: 400,
    field: 'index',
    received: '"lo*"',
  },
  {
    route: 'index',
    name: 'DELETE a corpus index',
    method: 'DELETE',
    url: '/spam-1',
    status: 403,
    field: 'index',
    received: 'spam-1',
  },
  {
    route: 'index',
    name: 'DELETE _all',
    method: 'DELETE',
    url: '/_all',
    status: 400,
    field: 'index',
    received: '_all',
  },
  {
    route: 'index',
    name: 'PUT a static setting on an open index',
    method: 'PUT',
    url: '/logs/_settings',
    body: { index: { number_of_shards: 4 } },
    status: 400,
    field: 'number_of_shards',
    received: '4',
  },
  {
    route: 'index',
    name: 'PUT settings of a corpus index',
    method: 'PUT',
    url: '/spam-2/_settings',
    body: { refresh_interval: '1s' },
    status: 403,
    field: 'index',
    received: 'spam-2',
  },
  {
    route: 'index',
    name: 'PUT settings that are not an object',
    method: 'PUT',
    url: '/logs/_settings',
    body: [1],
    status: 400,
    field: 'body',
    received: '[1]',
  },
  {
    route: 'index',
    name: 'PUT an unknown setting',
    method: 'PUT',
    url: '/logs/_settings',
    body: { index: { frob: 1 } },
    status: 400,
    field: 'index.frob',
    received: 'frob',
  },
  {
    route: 'index',
    name: 'PUT a bad refresh interval',
    method: 'PUT',
    url: '/logs/_settings',
    body: { index: { refresh_interval: 'often' } },
    status: 400,
    field: 'refresh_interval',
    received: '"often"',
  },
  {
    route: 'index',
    name: 'GET settings of a missing index',
    method: 'GET',
    url: '/nope/_settings',
    status: 404,
    field: 'index',
    received: 'nope',
  },
  ...(
    [
      ['T', 'must be lower cased'],
      ['..', "must not be '.' or '..'"],
      ['a%2Fb', 'must not contain the following characters'],
      ['a%20b', 'must not contain a space'],
      ['_t', "must not start with '_'"],
      ['a%2Cb', "must not contain a ','"],
      ['a%3Ab', "must not contain ':'"],
      ['-t', "must not start with '-' or '+'"],
    ] as const
  ).map(
    ([name, rule]): BadInput => ({
      route: 'index',
      name: `PUT a template named ${name}`,
      method: 'PUT',
      url: `/_index_template/${name}`,
      body: { index_patterns: ['a*'] },
      status: 400,
      field: 'name',
      received: rule,
    }),
  ),
  ...(
    [
      [{ index_patterns: [] }, 'index_patterns', '[]'],
      [{ index_patterns: ['a b'] }, 'index_patterns[0]', 'a b'],
      [{ index_patterns: 7 }, 'index_patterns', '7'],
      [{ index_patterns: ['a*'], priority: -1 }, 'priority', '-1'],
      [{ index_patterns: ['a*'], priority: 'high' }, 'priority', '"high"'],
      [{ index_patterns: ['a*'], composed_of: ['c'] }, 'composed_of', '["c"]'],
      [{ index_patterns: ['a*'], colour: 1 }, 'colour', 'colour'],
      [{ index_patterns: ['a*'], template: { settings: { number_of_shards: 0 } } }, 'number_of_shards', '0'],
    ] as const
  ).map(
    ([body, field, received], i): BadInput => ({
      route: 'index',
      name: `PUT /_index_template/t${i} ${JSON.stringify(body)}`.slice(0, 90),
      method: 'PUT',
      url: `/_index_template/t${i}`,
      body,
      status: 400,
      field,
      received,
    }),
  ),
  {
    route: 'index',
    name: 'PUT a template with create=maybe',
    method: 'PUT',
    url: '/_index_template/tc?create=maybe',
    body: { index_patterns: ['a*'] },
    status: 400,
    field: 'create',
    received: '"maybe"',
  },
  {
    route: 'index',
    name: 'PUT a template that exists with create=true',
    method: 'PUT',
    url: '/_index_template/logs-template?create=true',
    body: { index_patterns: ['logs*'] },
    status: 400,
    field: 'name',
    received: '"logs-template"',
  },
  {
    route: 'index',
    name: 'DELETE a missing template',
    method: 'DELETE',
    url: '/_index_template/none',
    status: 404,
    field: 'index template',
    received: 'none',
  },
  {
    route: 'index',
    name: 'GET a missing template',
    method: 'GET',
    url: '/_index_template/none',
    status: 404,
    field: 'index template',
    received: 'none',
  },
  {
    route: 'index',
    name: 'refresh of a missing index',
    method: 'POST',
    url: '/nope/_refresh',
    status: 404,
    field: 'index',
    received: 'nope',
  },
];

// ---------------------------------------------------------------------------------------------------
// bulk
const TOO_LARGE = ndjson({ index: { _index: 'logs' } }, { pad: 'x'.repeat(70 * 1024) });
const BULK: BadInput[] = [
  ...(
    [
      ['{"index":{"_index":"logs"}}\n{"a":1}', 'newline', 'terminated'],
      ['{"index":\n{}\n', 'line [1]', 'JSON'],
      ['"index"\n{}\n', 'line [1]', 'VALUE_STRING'],
      ['{"upsert":{"_index":"logs"}}\n{}\n', 'line [1]', '[upsert]'],
      ['{"index":{"_index":"logs","_type":"doc"}}\n{}\n', '[_type]', '_type'],
      ['{"index":{"_index":"logs","pipeline":"p"}}\n{}\n', '[pipeline]', '"p"'],
      ['{"index":{"_index":"logs","op_type":"upsert"}}\n{}\n', '[op_type]', '"upsert"'],
      ['{"index":{"_index":"logs","op_type":"update"}}\n{}\n', '[op_type]', '"update"'],
      ['{"index":{"_index":"logs","op_type":""}}\n{}\n', '[op_type]', '""'],
      ['{"index":{"_index":"logs","op_type":7}}\n{}\n', '[op_type]', '7'],
      ['{"delete":{"_index":"logs"}}\n', 'id is missing', 'line 1'],
      ['{"update":{"_index":"logs","_id":"1"}}\n{"detect_noop":true}\n', 'doc is missing', 'line 2'],
      ['{"index":{"_index":"logs"}}\n', '[index]', 'no document line'],
      ['{"index":{}}\n{}\n', 'index is missing', 'line 1'],
      ['{"index":{"_index":"logs","retry_on_conflict":-1}}\n{}\n', '[retry_on_conflict]', '-1'],
      ['{"index":{"_index":"logs","retry_on_conflict":1e999}}\n{}\n', '[retry_on_conflict]', 'Infinity'],
      ['{"index":{"_index":"logs","_id":["a"]}}\n{}\n', '[_id]', '["a"]'],
      ['{"index":{"_index":"logs"},"create":{}}\n{}\n', 'line [1]', 'END_OBJECT'],
      ['{"index":{"_index":"logs","frob":1}}\n{}\n', '[frob]', 'frob'],
      ['{"update":{"_index":"logs","_id":"1"}}\n{"doc":{},"colour":1}\n', '[colour]', 'colour'],
      ['[1]\n{}\n', 'line [1]', 'START_ARRAY'],
    ] as const
  ).map(
    ([body, field, received], i): BadInput => ({
      route: 'bulk',
      name: `bulk ${i + 1}: ${JSON.stringify(body).slice(0, 70)}`,
      method: 'POST',
      url: '/_bulk',
      body,
      headers: { 'content-type': 'application/x-ndjson' },
      status: 400,
      field,
      received,
    }),
  ),
  {
    route: 'bulk',
    name: 'refresh=maybe',
    method: 'POST',
    url: '/_bulk?refresh=maybe',
    body: ndjson({ index: { _index: 'logs' } }, {}),
    status: 400,
    field: 'refresh',
    received: '"maybe"',
  },
  {
    route: 'bulk',
    name: 'an unknown URL parameter',
    method: 'POST',
    url: '/_bulk?pipeline=p',
    body: ndjson({ index: { _index: 'logs' } }, {}),
    status: 400,
    field: 'url parameter [pipeline]',
    received: '"p"',
  },
  {
    route: 'bulk',
    name: 'routing given twice',
    method: 'POST',
    url: '/_bulk?routing=a&routing=b',
    body: ndjson({ index: { _index: 'logs' } }, {}),
    status: 400,
    field: 'routing',
    received: '["a","b"]',
  },
  {
    route: 'bulk',
    name: 'a body over the size limit',
    method: 'POST',
    url: '/_bulk',
    body: TOO_LARGE,
    status: 413,
    field: 'body is larger than the limit of 65536 bytes for POST /_bulk',
    received: `received ${Buffer.byteLength(TOO_LARGE)} bytes`,
  },
];

// ---------------------------------------------------------------------------------------------------
// documents and _cat
const DOCUMENTS: BadInput[] = [
  {
    route: 'document',
    name: 'GET from a missing index',
    method: 'GET',
    url: '/nope/_doc/1',
    status: 404,
    field: 'index',
    received: 'nope',
  },
  {
    route: 'document',
    name: 'GET with an unknown URL parameter',
    method: 'GET',
    url: '/logs/_doc/1?frobnicate=false',
    status: 400,
    field: 'url parameter [frobnicate]',
    received: '"false"',
  },
  {
    route: 'document',
    name: 'GET with routing given twice',
    method: 'GET',
    url: '/logs/_doc/1?routing=a&routing=b',
    status: 400,
    field: 'routing',
    received: '["a","b"]',
  },
  {
    route: 'document',
    name: 'GET from a corpus index',
    method: 'GET',
    url: '/spam-1/_doc/1',
    status: 404,
    field: 'index',
    received: 'spam-1',
  },
  {
    route: 'document',
    name: 'GET with a wildcard index',
    method: 'GET',
    url: '/lo*/_doc/1',
    status: 404,
    field: 'index',
    received: 'lo*',
  },
  {
    route: 'document',
    name: 'PUT with _id inside the document',
    method: 'PUT',
    url: '/logs/_doc/m1',
    body: { _id: 'other', a: 1 },
    status: 400,
    field: 'field [_id] is a metadata field',
    received: '"other"',
  },
  {
    route: 'document',
    name: 'PUT with a timeout past a 64-bit amount',
    method: 'PUT',
    url: '/logs/_doc/m2?timeout=99999999999999999999d',
    body: { a: 1 },
    status: 400,
    field: 'timeout',
    received: '"99999999999999999999d"',
  },
];
const CAT: BadInput[] = [
  {
    route: 'cat',
    name: 'format=yaml',
    method: 'GET',
    url: '/_cat/shards?format=yaml',
    status: 400,
    field: 'format',
    received: '"yaml"',
  },
  {
    route: 'cat',
    name: 'format=xml for an index',
    method: 'GET',
    url: '/_cat/shards/logs?format=xml',
    status: 400,
    field: 'format',
    received: '"xml"',
  },
  {
    route: 'cat',
    name: 'an unknown parameter',
    method: 'GET',
    url: '/_cat/shards?h=index',
    status: 400,
    field: 'url parameter [h]',
    received: '"index"',
  },
  {
    route: 'cat',
    name: 'a missing index',
    method: 'GET',
    url: '/_cat/shards/nope',
    status: 404,
    field: 'index',
    received: 'nope',
  },
  {
    route: 'cat',
    name: 'format given twice',
    method: 'GET',
    url: '/_cat/shards?format=json&format=text',
    status: 400,
    field: 'format',
    received: '["json","text"]',
  },
];
const OTHER: BadInput[] = [
  {
    route: 'other',
    name: 'pretty on node stats with another parameter',
    method: 'GET',
    url: '/_nodes/stats?pretty&level=shards',
    status: 400,
    field: 'url parameter [level]',
    received: '"shards"',
  },
  {
    route: 'other',
    name: 'an unknown route',
    method: 'POST',
    url: '/_frobnicate',
    body: {},
    status: 404,
    field: 'POST',
    received: '/_frobnicate',
  },
];

// ---------------------------------------------------------------------------------------------------
// auth: every write route, without a token, with a wrong one, and the writer token on admin routes
const WRITE_ROUTES: ReadonlyArray<readonly [Method, string, unknown, 'admin' | 'write']> = [
  ['PUT', '/authz-new', {}, 'admin'],
  ['DELETE', '/logs', undefined, 'admin'],
  ['PUT', '/logs/_settings', { index: { refresh_interval: '2s' } }, 'admin'],
  ['PUT', '/_index_template/authz', { index_patterns: ['authz*'] }, 'admin'],
  ['POST', '/_index_template/authz', { index_patterns: ['authz*'] }, 'admin'],
  ['DELETE', '/_index_template/logs-template', undefined, 'admin'],
  ['PUT', '/_sandbox', { name: 'authz', priority: 1 }, 'admin'],
  ['PUT', '/_sandbox/dashboards', { priority: 22 }, 'admin'],
  ['DELETE', `/_sandbox/${GROUPING}`, undefined, 'admin'],
  ['PUT', '/_query_priority', { enabled: true }, 'admin'],
  ['POST', '/_bulk', ndjson({ index: { _index: 'logs' } }, { a: 1 }), 'write'],
  ['PUT', '/_bulk', ndjson({ index: { _index: 'logs' } }, { a: 1 }), 'write'],
  ['POST', '/logs/_bulk', ndjson({ index: {} }, { a: 1 }), 'write'],
  ['PUT', '/logs/_bulk', ndjson({ index: {} }, { a: 1 }), 'write'],
  ['POST', '/logs/_refresh', undefined, 'write'],
  ['GET', '/logs/_refresh', undefined, 'write'],
  ['POST', '/_refresh', undefined, 'write'],
];
const AUTH: BadInput[] = WRITE_ROUTES.flatMap(([method, url, body, role]): BadInput[] => {
  const base = { route: 'auth', method, url, ...(body === undefined ? {} : { body }) };
  const cases: BadInput[] = [
    {
      ...base,
      name: `${method} ${url} without a token`,
      as: 'none',
      status: 401,
      field: 'Authorization',
      received: 'received nothing',
    },
    {
      ...base,
      name: `${method} ${url} with a wrong token`,
      as: 'wrong',
      status: 403,
      field: 'Authorization',
      received: 'received a wrong token (28 characters)',
    },
    {
      ...base,
      name: `${method} ${url} with a malformed header`,
      as: 'none',
      headers: { authorization: `Token ${ADMIN}` },
      status: 401,
      field: 'Authorization',
      received: 'with scheme "Token"',
    },
  ];
  if (role === 'admin') {
    cases.push({
      ...base,
      name: `${method} ${url} with the writer token`,
      as: 'writer',
      status: 403,
      field: 'Authorization',
      received: 'received the writer token',
    });
  }
  return cases;
});

const CASES: readonly BadInput[] = [
  ...SEARCH,
  ...SANDBOX,
  ...HEADERS,
  ...QUERY_PRIORITY,
  ...INDEX,
  ...BULK,
  ...DOCUMENTS,
  ...CAT,
  ...OTHER,
  ...AUTH,
];

// ---------------------------------------------------------------------------------------------------

let dir: string;
let runtime: Runtime;
let app: FastifyInstance;
let port: number;
let groupingId: string;
const totals = { cases: 0, fiveHundreds: 0, hangs: 0, crashes: 0, byRoute: new Map<string, number>() };

interface Answer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly text: string;
}

/** One request over a fresh connection (node:http, so URLs go out exactly as written). */
function send(
  method: Method,
  url: string,
  headers: Record<string, string | readonly string[]>,
  body: string | undefined,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: url,
        headers: { ...headers, connection: 'close' },
        agent: false,
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          text += chunk;
        });
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, text }),
        );
        response.on('error', reject);
      },
    );
    request.setTimeout(CASE_TIMEOUT_MS, () =>
      request.destroy(Object.assign(new Error('hang'), { code: 'HANG' })),
    );
    request.on('error', reject);
    request.end(body);
  });
}

async function stillSearches(): Promise<boolean> {
  try {
    const r = await send('POST', '/_all/_search', { 'content-type': 'application/json' }, '{"size":0}');
    return r.status === 200 && JSON.parse(r.text).hits !== undefined;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'qs-bad-input-'));
  runtime = await createRuntime({
    dataDir: path.join(dir, 'node'),
    cacheDir: path.join(dir, 'cache'),
    threads: 2,
    spareWorkers: 0,
    engineOptions: { maxDocumentsPerIndex: 10 },
    sandboxes: SANDBOXES,
  });
  app = buildHttpServer(runtime, { adminToken: ADMIN, writerToken: WRITER, bulkBodyLimitBytes: 64 * 1024 });
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as { port: number }).port;
  const admin = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };
  // Things for the cases to point at: a writable index, a template, a sandbox that names no attributes.
  for (const [method, url, body] of [
    ['PUT', '/logs', '{"settings":{"number_of_shards":2}}'],
    ['PUT', '/_index_template/logs-template', '{"index_patterns":["logs*"],"priority":5}'],
    ['PUT', '/_sandbox', '{"name":"grouping","priority":2}'],
  ] as const) {
    const r = await send(method, url, admin, body);
    if (r.status >= 300) throw new Error(`setup ${method} ${url}: ${r.status} ${r.text}`);
    if (url === '/_sandbox') groupingId = JSON.parse(r.text)._id;
  }
}, 120_000);

afterAll(async () => {
  await app?.close();
  await runtime?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the bad-input table', () => {
  it('has at least 150 distinct cases over every route family', () => {
    expect(CASES.length).toBeGreaterThanOrEqual(150);
    const keys = CASES.map(
      (c) => `${c.method} ${c.url} ${JSON.stringify(c.body)} ${JSON.stringify(c.headers)} ${c.as}`,
    );
    expect(new Set(keys).size).toBe(keys.length);
    expect(new Set(CASES.map((c) => c.route))).toEqual(
      new Set([
        'search',
        'sandbox',
        'headers',
        'query-priority',
        'index',
        'bulk',
        'document',
        'cat',
        'other',
        'auth',
      ]),
    );
  });

  it.each(CASES.map((c) => [`${c.route}: ${c.name}`, c] as const))('%s', async (_label, c) => {
    const token = TOKENS[c.as ?? 'admin'];
    const body =
      c.body === undefined ? undefined : typeof c.body === 'string' ? c.body : JSON.stringify(c.body);
    const headers: Record<string, string | readonly string[]> = {
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    };
    for (const [name, value] of Object.entries(c.headers ?? {})) {
      headers[name] = typeof value === 'string' ? value.replace(GROUPING, groupingId) : value;
    }
    const url = c.url.replace(GROUPING, groupingId);
    const field = c.field.replace(GROUPING, groupingId);
    totals.cases++;
    totals.byRoute.set(c.route, (totals.byRoute.get(c.route) ?? 0) + 1);
    let answer: Answer;
    try {
      answer = await send(c.method, url, headers, body);
    } catch (error) {
      if ((error as { code?: string }).code === 'HANG') totals.hangs++;
      else totals.crashes++;
      throw error;
    }
    if (answer.status >= 500) totals.fiveHundreds++;
    const alive = await stillSearches();
    if (!alive) totals.crashes++;
    let json: { error?: { reason?: string; type?: string }; status?: number } | undefined;
    try {
      json = JSON.parse(answer.text);
    } catch {
      json = undefined;
    }
    const reason = json?.error?.reason ?? '';
    if (process.env['DEBUG_BAD'])
      console.log('CASE', c.name, answer.status, reason || answer.text.slice(0, 200));
    expect({ status: answer.status, reason }).toMatchObject({ status: c.status });
    expect(json?.status).toBe(c.status);
    expect(reason, 'the message names the field').toContain(field);
    expect(reason, 'the message shows the value received').toContain(c.received);
    expect(alive, 'the server still answers a search').toBe(true);
  });

  it("still honours the README's explicit-choice example, and the root for a request that belongs there", async () => {
    const body = '{}';
    const json = { 'content-type': 'application/json' };
    const completions = async (id: string): Promise<number> =>
      (
        Object.values(JSON.parse((await send('GET', '/_sandbox/_stats', {}, undefined)).text))[0] as {
          sandboxes: Record<string, { total_completions: number }>;
        }
      ).sandboxes[id]!.total_completions;
    const [dashboards, root] = [await completions('dashboards'), await completions('_root')];
    const readme = await send(
      'POST',
      '/spam-1/_search',
      { ...json, 'x-user': 'dash_ops', 'x-sandbox-id': 'dashboards' },
      body,
    );
    expect(readme.status).toBe(200);
    expect(await completions('dashboards')).toBe(dashboards + 1);
    const own = await send(
      'POST',
      '/spam-1/_search',
      { ...json, 'x-user': 'alice', 'x-sandbox-id': '_root' },
      body,
    );
    expect(own.status).toBe(200);
    expect(await completions('_root')).toBe(root + 1);
  });

  it('counted 0 × 5xx, 0 hangs and 0 crashes', () => {
    const routes = [...totals.byRoute].map(([route, n]) => `${route} ${n}`).join(', ');
    console.log(
      `bad-input table: ${totals.cases} cases (${routes}); ${totals.fiveHundreds} × 5xx, ${totals.hangs} hangs, ${totals.crashes} crashes`,
    );
    expect(totals.cases).toBe(CASES.length);
    expect(totals).toMatchObject({ fiveHundreds: 0, hangs: 0, crashes: 0 });
  });
});
