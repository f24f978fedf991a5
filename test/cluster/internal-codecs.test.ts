/**
 * The internal protocol's codecs: every message encoded by one side decodes to the same message on
 * the other (through JSON, as it travels), and a malformed one is refused with the field and the
 * value named.
 */
import { describe, expect, it } from 'vitest';
import {
  decodeCatShardsAnswer,
  decodeCpuHogRequest,
  decodeLatencyRequest,
  decodeDropIndexQuery,
  decodeErrorAnswer,
  decodeGetAnswer,
  decodeGetRequest,
  decodeIndexMetadataRequest,
  decodeNodeInfo,
  decodeRecoverAnswer,
  decodeRecoverRequest,
  decodeRefreshRequest,
  decodeReplicateAnswer,
  decodeReplicateRequest,
  decodeSettingsRequest,
  decodeShardBulkAnswer,
  decodeShardBulkRequest,
  decodeShardSearchAnswer,
  decodeShardSearchRequest,
  encodeAcknowledged,
  encodeCatShardsAnswer,
  encodeCpuHogRequest,
  encodeLatencyRequest,
  encodeGetRequest,
  encodeIndexMetadataRequest,
  encodeNodeInfo,
  encodeRecoverAnswer,
  encodeRecoverRequest,
  encodeRefreshAnswer,
  encodeRefreshRequest,
  encodeReplicateAnswer,
  encodeReplicateRequest,
  encodeSettingsRequest,
  encodeShardBulkAnswer,
  encodeShardBulkRequest,
  encodeShardSearchAnswer,
  encodeShardSearchRequest,
  indexPath,
  indexSettingsPath,
  type ShardBulkResult,
} from '../../src/cluster/internal-codecs.js';
import { InvalidArgumentError } from '../../src/errors.js';
import type { IndexMetadata } from '../../src/indices/index-metadata-store.js';
import type { LoggedOperation } from '../../src/indices/shard-log.js';

/** What the other side reads: the value after a trip through JSON. */
const wire = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

/** Runs `decode` and returns the InvalidArgumentError it threw (fails the test when it did not). */
function refusal(decode: () => unknown): InvalidArgumentError {
  try {
    decode();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidArgumentError);
    return error as InvalidArgumentError;
  }
  throw new Error('the decoder accepted a malformed message');
}

const OPERATIONS: LoggedOperation[] = [
  { op: 'index', id: 'a', seqNo: 0, source: { n: 1 } },
  { op: 'delete', id: 'b', seqNo: 1, routing: 'r' },
];

describe('shard search', () => {
  it('round-trips a request, its search body spliced in as serialised', () => {
    const text = encodeShardSearchRequest({
      index: 'alpha,beta',
      shards: { alpha: [0, 2], beta: [1] },
      bodyJson: JSON.stringify({ query: { match_all: {} }, size: 10 }),
      cancelAfterTimeInterval: '5s',
    });
    expect(decodeShardSearchRequest(JSON.parse(text))).toEqual({
      index: 'alpha,beta',
      shards: { alpha: [0, 2], beta: [1] },
      body: { query: { match_all: {} }, size: 10 },
      cancel_after_time_interval: '5s',
    });
    const plain = decodeShardSearchRequest(
      JSON.parse(encodeShardSearchRequest({ index: 'alpha', shards: { alpha: [0] }, bodyJson: '{}' })),
    );
    expect(plain).toEqual({ index: 'alpha', shards: { alpha: [0] }, body: {} });
  });

  it.each([
    ['a body that is no object', [], 'body'],
    ['an unknown field', { index: 'a', shards: { a: [0] }, size: 3 }, 'size'],
    ['a wildcard index', { index: 'a*', shards: { 'a*': [0] } }, 'index'],
    ['_all', { index: '_all', shards: { _all: [0] } }, 'index'],
    ['a repeated index', { index: 'a,a', shards: { a: [0] } }, 'index'],
    ['shards for another index', { index: 'a', shards: { a: [0], b: [1] } }, 'shards.b'],
    ['an index without shards', { index: 'a,b', shards: { a: [0] } }, 'shards'],
    ['a body that is a list', { index: 'a', shards: { a: [0] }, body: [1] }, 'body'],
    [
      'a numeric cancel_after_time_interval',
      { index: 'a', shards: { a: [0] }, cancel_after_time_interval: 5 },
      'cancel_after_time_interval',
    ],
  ])('refuses %s, naming the field', (_what, raw, field) => {
    const error = refusal(() => decodeShardSearchRequest(raw));
    expect(error.path).toBe(field);
    expect(error.message).toContain('received');
  });

  it('round-trips an answer and reads missing figures as 0', () => {
    const answer = encodeShardSearchAnswer('d1', 1234, 2, { hits: { hits: [] } });
    expect(decodeShardSearchAnswer(wire(answer))).toEqual(answer);
    expect(decodeShardSearchAnswer({ node_id: 'd1', service_time_ns: -1, response: null })).toEqual({
      node_id: 'd1',
      service_time_ns: 0,
      queue_size: 0,
      response: null,
    });
  });

  it('refuses an answer without a response, or that is no object', () => {
    expect(refusal(() => decodeShardSearchAnswer({ node_id: 'd1' })).path).toBe('response');
    expect(refusal(() => decodeShardSearchAnswer('oops')).path).toBe('shard_search answer');
  });
});

describe('node info', () => {
  const info = encodeNodeInfo({
    nodeId: 'd1',
    indices: ['alpha'],
    shardsPerIndex: 2,
    copies: [
      { index: 'alpha', shard: 0, primary: true },
      { index: 'alpha', shard: 1, primary: false },
    ],
    docsPerIndex: { alpha: 10 },
    mappings: undefined,
  });

  it('round-trips, without the keys the node does not report', () => {
    expect(info).not.toHaveProperty('mappings');
    expect(decodeNodeInfo(wire(info), 'http://d1')).toEqual(wire(info));
  });

  it.each([
    ['no node_id', { ...info, node_id: '' }, 'no node_id'],
    ['a shard count of 0', { ...info, shards_per_index: 0 }, 'a bad shards_per_index; received 0'],
    [
      'a copy of an unknown index',
      { ...info, copies: [{ index: 'beta', shard: 0, primary: true }] },
      'a bad copy',
    ],
    [
      'a copy past the shard count',
      { ...info, copies: [{ index: 'alpha', shard: 2, primary: true }] },
      'a bad copy',
    ],
  ])('refuses %s, naming the node, the field and the value', (_what, raw, words) => {
    expect(() => decodeNodeInfo(raw, 'http://d1')).toThrow(
      `data node http://d1 answered /_internal/node_info with ${words}`,
    );
  });
});

describe('index metadata and settings', () => {
  const meta = {
    name: 'logs',
    uuid: 'u-1',
    creationDateMs: 1_700_000_000_000,
    settings: {
      numberOfShards: 2,
      numberOfReplicas: 1,
      explicit: { numberOfShards: 2, numberOfReplicas: 1 },
    },
    layout: [
      { primary: 'd1', replicas: ['d2'] },
      { primary: 'd2', replicas: ['d1'] },
    ],
  } as unknown as IndexMetadata;

  it('round-trips the metadata of the index the URL names, and refuses another', () => {
    const decoded = decodeIndexMetadataRequest(wire(encodeIndexMetadataRequest(meta)), 'logs');
    expect(decoded.name).toBe('logs');
    expect(decoded.uuid).toBe('u-1');
    expect(decoded.settings.numberOfShards).toBe(2);
    expect(decoded.layout.map((p) => p.primary)).toEqual(['d1', 'd2']);
    const error = refusal(() => decodeIndexMetadataRequest(wire(encodeIndexMetadataRequest(meta)), 'other'));
    expect(error.path).toBe('body.name');
    expect(error.received).toBe('logs');
    expect(
      refusal(() =>
        decodeIndexMetadataRequest(
          { ...(wire(encodeIndexMetadataRequest(meta)) as object), uuid: 'a b' },
          'logs',
        ),
      ).path,
    ).toBe('body.uuid');
  });

  it('encodes paths with the name and uuid escaped, and reads the uuid back', () => {
    expect(indexPath('a b')).toBe('/_internal/indices/a%20b');
    expect(indexPath('logs', 'u/1')).toBe('/_internal/indices/logs?uuid=u%2F1');
    expect(indexSettingsPath('logs')).toBe('/_internal/indices/logs/_settings');
    const query = Object.fromEntries(new URL(`http://x${indexPath('logs', 'u/1')}`).searchParams);
    expect(decodeDropIndexQuery(query)).toBe('u/1');
    expect(refusal(() => decodeDropIndexQuery({})).path).toBe('uuid');
  });

  it('round-trips a settings change and refuses one without a uuid or with a bad value', () => {
    const decoded = decodeSettingsRequest(
      wire(encodeSettingsRequest('u-1', { numberOfReplicas: 1, refreshIntervalMs: 5000 } as never)),
    );
    expect(decoded.uuid).toBe('u-1');
    expect(decoded.settings.numberOfReplicas).toBe(1);
    expect(refusal(() => decodeSettingsRequest({ settings: {} })).path).toBe('uuid');
    expect(
      refusal(() => decodeSettingsRequest({ uuid: 'u', settings: { 'index.number_of_replicas': 'many' } }))
        .path,
    ).toContain('settings');
    expect(refusal(() => decodeSettingsRequest(null)).path).toBe('body');
  });

  it('acknowledges with the node id', () => {
    expect(encodeAcknowledged('d1')).toEqual({ acknowledged: true, node_id: 'd1' });
  });
});

describe('shard bulks', () => {
  const request = {
    refresh: 'wait_for' as const,
    shards: [
      {
        index: 'logs',
        shard: 0,
        items: [{ position: 0, action: 'index' as const, id: 'a', source: { n: 1 } }],
      },
      { index: 'logs', shard: 1, items: [{ position: 1, action: 'delete' as const, id: 'b' }] },
    ],
  };

  it('round-trips a request; refresh absent reads as false', () => {
    expect(decodeShardBulkRequest(wire(encodeShardBulkRequest(request)))).toEqual(request);
    expect(decodeShardBulkRequest({ shards: [] }).refresh).toBe('false');
  });

  it.each([
    ['shards that are no list', { shards: {} }, 'shards'],
    ['a shard without an index', { shards: [{ shard: 0, items: [] }] }, 'index'],
    ['a shard number past 1023', { shards: [{ index: 'x', shard: 1024, items: [] }] }, 'shard'],
    [
      'an item with an unknown action',
      { shards: [{ index: 'x', shard: 0, items: [{ position: 0, action: 'upsert', id: 'a' }] }] },
      'shards[0].items[0]',
    ],
    ['a bad refresh', { refresh: 'sometimes', shards: [] }, 'refresh'],
  ])('refuses %s, naming the field', (_what, raw, field) => {
    expect(refusal(() => decodeShardBulkRequest(raw)).path).toBe(field);
  });

  it('round-trips an answer, failed shards with their status and error', () => {
    const results: ShardBulkResult[] = [
      {
        index: 'logs',
        shard: 0,
        ok: true,
        outcome: {
          results: [{ position: 0, status: 201, result: 'created', version: 1, seqNo: 0 }],
          shards: { total: 2, successful: 2, failed: 0 },
          forcedRefresh: false,
          replicationNs: 50,
        },
      },
      {
        index: 'logs',
        shard: 1,
        ok: false,
        status: 429,
        error: { type: 'es_rejected_execution_exception', reason: 'queue full' },
      },
    ];
    expect(decodeShardBulkAnswer(wire(encodeShardBulkAnswer('d1', 900, results)))).toEqual({
      serviceTimeNs: 900,
      shards: results,
    });
  });

  it('reads a lacking answer as the coordinator always did: no figure is 0, a bare failure is a 500', () => {
    expect(decodeShardBulkAnswer({ node_id: 'd1' })).toEqual({ serviceTimeNs: 0, shards: [] });
    expect(decodeShardBulkAnswer({ shards: [7, { index: 'x', shard: 0, ok: false }] }).shards).toEqual([
      {
        index: 'x',
        shard: 0,
        ok: false,
        status: 500,
        error: { type: 'exception', reason: 'shard bulk failed' },
      },
    ]);
    expect(refusal(() => decodeShardBulkAnswer([])).path).toBe('shard_bulk answer');
  });
});

describe('replication and recovery', () => {
  it('round-trips a replication request, with and without the primary position and term', () => {
    const full = {
      index: 'logs',
      uuid: 'u',
      shard: 1,
      refresh: 'true' as const,
      operations: OPERATIONS,
      primaryNextSeqNo: 2,
      primaryTerm: 3,
    };
    expect(decodeReplicateRequest(wire(encodeReplicateRequest(full)))).toEqual(full);
    const bare = { index: 'logs', uuid: 'u', shard: 1, refresh: 'false' as const, operations: [] };
    const encoded = encodeReplicateRequest(bare);
    expect(encoded).not.toHaveProperty('primary_next_seq_no');
    expect(encoded).not.toHaveProperty('primary_term');
    expect(decodeReplicateRequest(wire(encoded))).toEqual({
      ...bare,
      primaryNextSeqNo: undefined,
      primaryTerm: undefined,
    });
  });

  it.each([
    ['no uuid', { index: 'logs', shard: 0, operations: [] }, 'uuid', 'must be a non-empty string'],
    [
      'a fractional shard',
      { index: 'logs', uuid: 'u', shard: 0.5, operations: [] },
      'shard',
      'must be an integer in 0..1023',
    ],
    [
      'a primary term of 0',
      { index: 'logs', uuid: 'u', shard: 0, primary_term: 0, operations: [] },
      'primary_term',
      'must be an integer >= 1',
    ],
    [
      'operations that are no list',
      { index: 'logs', uuid: 'u', shard: 0, operations: {} },
      'operations',
      'must be an array',
    ],
    [
      'an operation without a seqNo',
      { index: 'logs', uuid: 'u', shard: 0, operations: [{ op: 'index', id: 'a' }] },
      'operations[0]',
      'must be a logged operation',
    ],
  ])('refuses a replication request with %s, naming the field', (_what, raw, field, words) => {
    const error = refusal(() => decodeReplicateRequest(raw));
    expect(error.path).toBe(field);
    expect(error.expectation).toContain(words);
  });

  it('round-trips both replica answers and refuses a 409 without its next sequence number', () => {
    const applied = encodeReplicateAnswer('d2', { applied: true, serviceTimeNs: 77 });
    expect(applied.status).toBe(200);
    expect(decodeReplicateAnswer(applied.status, wire(applied.body) as Record<string, unknown>)).toEqual({
      applied: true,
      serviceTimeNs: 77,
    });
    const behind = encodeReplicateAnswer('d2', { applied: false, nextSeqNo: 5 });
    expect(behind.status).toBe(409);
    expect(decodeReplicateAnswer(behind.status, wire(behind.body) as Record<string, unknown>)).toEqual({
      applied: false,
      nextSeqNo: 5,
    });
    const error = refusal(() => decodeReplicateAnswer(409, { node_id: 'd2', next_seq_no: 'soon' }));
    expect(error.path).toBe('next_seq_no');
    expect(error.received).toBe('soon');
  });

  it('round-trips a recovery request and answer, and refuses malformed ones', () => {
    const request = { index: 'logs', uuid: 'u', shard: 0, fromSeqNo: 4 };
    expect(decodeRecoverRequest(wire(encodeRecoverRequest(request)))).toEqual(request);
    expect(
      refusal(() => decodeRecoverRequest({ index: 'logs', uuid: 'u', shard: 0, from_seq_no: -1 })).path,
    ).toBe('from_seq_no');
    expect(refusal(() => decodeRecoverRequest({ index: 'logs', uuid: 'u', shard: 0 })).path).toBe(
      'from_seq_no',
    );
    expect(
      decodeRecoverAnswer(wire(encodeRecoverAnswer('d1', OPERATIONS)) as Record<string, unknown>),
    ).toEqual(OPERATIONS);
    expect(
      refusal(() => decodeRecoverAnswer({ operations: [{ op: 'merge', id: 'a', seqNo: 0 }] })).path,
    ).toBe('operations[0]');
  });
});

describe('GET, _cat/shards, refresh and errors', () => {
  it('round-trips a GET request and answer', () => {
    const request = { index: 'logs', shard: 3, id: 'doc-1' };
    expect(decodeGetRequest(wire(encodeGetRequest(request)))).toEqual(request);
    expect(refusal(() => decodeGetRequest({ index: 'logs', shard: 3, id: '' })).path).toBe('id');
    expect(refusal(() => decodeGetRequest('logs')).path).toBe('body');
    const found = {
      _index: 'logs',
      _id: 'doc-1',
      _version: 1,
      _seq_no: 0,
      _primary_term: 1,
      found: true,
      _source: { n: 1 },
    };
    expect(decodeGetAnswer(wire(found) as Record<string, unknown>)).toEqual(found);
    expect(refusal(() => decodeGetAnswer({ _index: 'logs', _id: 'doc-1', found: 'yes' })).path).toBe('found');
  });

  it('round-trips _cat/shards rows and refuses rows that are not', () => {
    const rows = [
      { index: 'logs', shard: '0', prirep: 'p' as const, state: 'STARTED' as const, docs: '3', node: 'd1' },
    ];
    expect(decodeCatShardsAnswer(wire(encodeCatShardsAnswer('d1', rows)) as Record<string, unknown>)).toEqual(
      rows,
    );
    expect(refusal(() => decodeCatShardsAnswer({ rows: 'none' })).path).toBe('rows');
    expect(refusal(() => decodeCatShardsAnswer({ rows: [{ index: 'logs', shard: 0 }] })).path).toBe(
      'rows[0]',
    );
  });

  it('round-trips a refresh request and refuses indices that are not names', () => {
    expect(decodeRefreshRequest(wire(encodeRefreshRequest(['a', 'b'])))).toEqual(['a', 'b']);
    expect(refusal(() => decodeRefreshRequest({ indices: [1] })).path).toBe('indices.0');
    expect(encodeRefreshAnswer('d1', 4)).toEqual({ node_id: 'd1', refreshed: 4 });
  });

  it('reads an error answer, or the status line when there is none', () => {
    expect(
      decodeErrorAnswer({ error: { type: 'x_exception', reason: 'why' }, status: 400 }, 400, 'Bad Request'),
    ).toEqual({ type: 'x_exception', reason: 'why' });
    expect(decodeErrorAnswer('<html>', 502, 'Bad Gateway')).toEqual({
      type: 'exception',
      reason: 'HTTP 502 Bad Gateway',
    });
    expect(decodeErrorAnswer({ error: {} }, 500, '')).toEqual({ type: 'exception', reason: 'HTTP 500' });
  });
});

describe('debug routes', () => {
  it('round-trips a CPU hog and a latency request, with their defaults', () => {
    expect(decodeCpuHogRequest(wire(encodeCpuHogRequest({ threads: 2, durationMs: 10_000 })))).toEqual({
      threads: 2,
      durationMs: 10_000,
    });
    expect(decodeCpuHogRequest({ duration_ms: 5 })).toEqual({ threads: 1, durationMs: 5 });
    const latency = { delayMs: 200, ratio: 0.3, durationMs: 60_000 };
    expect(decodeLatencyRequest(wire(encodeLatencyRequest(latency)))).toEqual(latency);
    expect(decodeLatencyRequest({ delay_ms: 5 })).toEqual({ delayMs: 5, ratio: 1, durationMs: 600_000 });
  });

  it('refuses a hog without a duration or with too many threads', () => {
    expect(refusal(() => decodeCpuHogRequest({ threads: 2 })).path).toBe('duration_ms');
    expect(refusal(() => decodeCpuHogRequest({ threads: 65, duration_ms: 5 })).received).toBe(65);
  });
});
