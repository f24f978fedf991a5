import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  formatClusterSpec,
  parseClusterSpec,
  parseDataNodeList,
  readClusterFile,
} from '../../src/cluster/cluster-spec.js';

const node = (id: string, url: string) => ({ id, url });

describe('cluster file', () => {
  it('reads the data nodes and fills the defaults', () => {
    const spec = parseClusterSpec({
      data_nodes: [node('d1', '127.0.0.1:9201'), node('d2', 'http://localhost:9202/')],
    });
    expect(spec).toEqual({
      shardsPerIndex: 3,
      replicas: 1,
      dataNodes: [node('d1', 'http://127.0.0.1:9201'), node('d2', 'http://localhost:9202')],
    });
  });

  it('round-trips through its file', async () => {
    const spec = parseClusterSpec({
      shards_per_index: 5,
      replicas: 0,
      data_nodes: [node('a', 'http://[::1]:9300')],
    });
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'qs-spec-')), 'cluster.json');
    writeFileSync(file, formatClusterSpec(spec));
    expect(await readClusterFile(file)).toEqual(spec);
  });

  it.each([
    [[], 'cluster must be a JSON object; received []'],
    [{ data_nodes: [] }, 'cluster.data_nodes must be an array of 1..64 data nodes; received []'],
    [
      { shard: 1, data_nodes: [] },
      'cluster.shard is not a cluster setting (known: shards_per_index, replicas, data_nodes); received 1',
    ],
    [
      { shards_per_index: 0, data_nodes: [node('a', 'h:1')] },
      'cluster.shards_per_index must be an integer in 1..64; received 0',
    ],
    [
      { replicas: 1.5, data_nodes: [node('a', 'h:1')] },
      'cluster.replicas must be an integer in 0..16; received 1.5',
    ],
    [{ data_nodes: ['h:1'] }, 'cluster.data_nodes[0] must be an object with id and url; received "h:1"'],
    [
      { data_nodes: [{ id: 'a b', url: 'h:1' }] },
      'cluster.data_nodes[0].id must be 1..64 characters of [A-Za-z0-9_.-]; received "a b"',
    ],
    [
      { data_nodes: [node('a', 'h:1'), node('a', 'h:2')] },
      'cluster.data_nodes[1].id must be unique; received "a"',
    ],
    [
      { data_nodes: [node('a', 'h:1'), node('b', 'http://h:1')] },
      'cluster.data_nodes[1].url must be unique; received "http://h:1"',
    ],
    [
      { data_nodes: [node('a', 'h')] },
      'cluster.data_nodes[0].url must be http://host:port or host:port (with a port, no path); received "h"',
    ],
    [
      { data_nodes: [node('a', 'https://h:1')] },
      'cluster.data_nodes[0].url must be http://host:port or host:port (with a port, no path); received "https://h:1"',
    ],
    [
      { data_nodes: [node('a', 'http://h:1/x')] },
      'cluster.data_nodes[0].url must be http://host:port or host:port (with a port, no path); received "http://h:1/x"',
    ],
    [
      { data_nodes: [{ id: 'a', url: 'h:1', role: 'x' }] },
      'cluster.data_nodes[0].role is not a data node field (known: id, url); received "x"',
    ],
  ])('refuses %j naming the field and the value', (document, message) => {
    expect(() => parseClusterSpec(document)).toThrow(message);
  });

  it('names the file when it cannot be read or is not JSON', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'qs-spec-'));
    await expect(readClusterFile(path.join(dir, 'none.json'))).rejects.toThrow(
      /--cluster cannot be read \(ENOENT\)/,
    );
    const bad = path.join(dir, 'bad.json');
    writeFileSync(bad, '{"data_nodes": [');
    await expect(readClusterFile(bad)).rejects.toThrow(/--cluster is not valid JSON/);
    const wrong = path.join(dir, 'wrong.json');
    writeFileSync(wrong, '{"data_nodes": [{"id": "a", "url": "x"}]}');
    await expect(readClusterFile(wrong)).rejects.toThrow(`(in ${wrong})`);
  });
});

describe('--data-nodes', () => {
  it('takes host:port and URLs, refusing repeats and bad entries', () => {
    expect(parseDataNodeList('127.0.0.1:9201, http://127.0.0.1:9202')).toEqual([
      { id: undefined, url: 'http://127.0.0.1:9201' },
      { id: undefined, url: 'http://127.0.0.1:9202' },
    ]);
    expect(() => parseDataNodeList('h:1,h:1')).toThrow(
      '--data-nodes must not repeat a data node (http://h:1)',
    );
    expect(() => parseDataNodeList('h:1,,h:2')).toThrow(
      '--data-nodes must be http://host:port or host:port; received ""',
    );
  });
});
