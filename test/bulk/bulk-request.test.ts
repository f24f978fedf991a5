import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.js';
import {
  type BulkItem,
  BulkRequestParser,
  type BulkParseResult,
  failedItemResponse,
} from '../../src/bulk/bulk-request.js';

const parser = new BulkRequestParser();

/** Lines joined with `\n`, with the final newline the format requires. */
function ndjson(...lines: string[]): string {
  return `${lines.join('\n')}\n`;
}

function items(result: BulkParseResult): readonly BulkItem[] {
  if (!result.ok) throw new Error(`expected ok, got ${result.error.type}: ${result.error.reason}`);
  return result.items;
}

describe('BulkRequestParser: well-formed requests', () => {
  it('reads all four actions with their lines, metadata and documents', () => {
    const result = parser.parse(
      ndjson(
        '{"index":{"_index":"logs","_id":"1"}}',
        '{"msg":"a"}',
        '{"create":{"_index":"logs","routing":"r1"}}',
        '{"msg":"b"}',
        '{"update":{"_index":"logs","_id":"1","retry_on_conflict":3}}',
        '{"doc":{"msg":"c"},"doc_as_upsert":true}',
        '{"delete":{"_index":"logs","_id":"2"}}',
      ),
    );
    expect(result).toMatchObject({ ok: true, failedItems: 0 });
    const [index, create, update, del] = items(result);
    expect(index).toEqual({
      action: 'index',
      position: 0,
      line: 1,
      sourceLine: 2,
      index: 'logs',
      id: '1',
      routing: undefined,
      error: undefined,
      source: { msg: 'a' },
    });
    expect(create).toMatchObject({
      action: 'create',
      position: 1,
      line: 3,
      sourceLine: 4,
      id: undefined,
      routing: 'r1',
    });
    expect(update).toMatchObject({
      action: 'update',
      line: 5,
      sourceLine: 6,
      id: '1',
      doc: { msg: 'c' },
      docAsUpsert: true,
      detectNoop: true,
      retryOnConflict: 3,
    });
    expect(del).toEqual({
      action: 'delete',
      position: 3,
      line: 7,
      index: 'logs',
      id: '2',
      routing: undefined,
      error: undefined,
    });
  });

  it('takes the index and routing from the URL unless the action line names them', () => {
    const result = parser.parse(
      ndjson('{"index":{}}', '{"a":1}', '{"index":{"_index":"other","routing":"x"}}', '{"a":2}'),
      { index: 'default', routing: 'url' },
    );
    expect(items(result).map((i) => [i.index, i.routing])).toEqual([
      ['default', 'url'],
      ['other', 'x'],
    ]);
  });

  it('skips blank action lines but counts them, and strips \\r\\n line ends', () => {
    const result = parser.parse(
      '\n{"index":{"_index":"a"}}\r\n{"x":1}\r\n\n{"delete":{"_index":"a","_id":"9"}}\n',
    );
    expect(items(result).map((i) => i.line)).toEqual([2, 5]);
    expect(items(result)[0]).toMatchObject({ source: { x: 1 }, sourceLine: 3 });
  });

  it('turns numeric and boolean metadata into text, treats routing "" as none and ignores null values', () => {
    const result = parser.parse(
      ndjson('{"index":{"_index":"a","_id":42,"routing":"","pipeline":null}}', '{}'),
    );
    expect(items(result)[0]).toMatchObject({ id: '42', routing: undefined, source: {} });
  });

  it('makes index with op_type create a create, keeps op_type index an index, and a create a create', () => {
    const result = parser.parse(
      ndjson(
        '{"index":{"_index":"a","op_type":"create"}}',
        '{}',
        '{"index":{"_index":"a","op_type":"index"}}',
        '{}',
        '{"index":{"_index":"a","op_type":"CREATE"}}',
        '{}',
        '{"create":{"_index":"a","op_type":"index"}}',
        '{}',
      ),
    );
    expect(items(result).map((i) => i.action)).toEqual(['create', 'index', 'create', 'create']);
  });

  it.each(['upsert', 'update', 'delete', '', 'foo'])(
    'refuses the whole request for op_type %j, naming it',
    (opType) => {
      const result = parser.parse(
        ndjson(
          '{"index":{"_index":"a"}}',
          '{}',
          `{"index":{"_index":"a","op_type":${JSON.stringify(opType)}}}`,
          '{}',
        ),
      );
      expect(result).toMatchObject({
        ok: false,
        error: { status: 400, type: 'illegal_argument_exception', line: 3 },
      });
      expect(result.ok === false && result.error.reason).toBe(
        `Action/metadata line [3]: [op_type] must be 'create' or 'index', found: [${opType}]; received ${JSON.stringify(opType)}`,
      );
    },
  );

  it('accepts bytes as UTF-8', () => {
    const result = parser.parse(Buffer.from(ndjson('{"index":{"_index":"a"}}', '{"name":"Zoë"}')));
    expect(items(result)[0]).toMatchObject({ source: { name: 'Zoë' } });
  });
});

/** Item-level failures: the request is accepted, the item carries an Elasticsearch-shaped error. */
const ITEM_ERRORS: readonly {
  readonly name: string;
  readonly body: string;
  readonly response: Record<string, unknown>;
}[] = [
  {
    name: 'an index name with capitals',
    body: ndjson('{"index":{"_index":"Logs","_id":"1"}}', '{"a":1}'),
    response: {
      index: {
        _index: 'Logs',
        _id: '1',
        status: 400,
        error: {
          type: 'invalid_index_name_exception',
          reason: 'Invalid index name [Logs], must be lowercase (bulk line 1)',
        },
      },
    },
  },
  {
    name: 'an index name with a forbidden character',
    body: ndjson('{"create":{"_index":"a*b"}}', '{"a":1}'),
    response: {
      create: {
        _index: 'a*b',
        _id: null,
        status: 400,
        error: {
          type: 'invalid_index_name_exception',
          reason:
            'Invalid index name [a*b], must not contain the following characters [ , ", *, \\, <, |, ,, >, /, ?] (bulk line 1)',
        },
      },
    },
  },
  {
    name: 'an index name starting with _',
    body: ndjson('{"delete":{"_index":"_x","_id":"1"}}'),
    response: {
      delete: {
        _index: '_x',
        _id: '1',
        status: 400,
        error: {
          type: 'invalid_index_name_exception',
          reason: "Invalid index name [_x], must not start with '_', '-', or '+' (bulk line 1)",
        },
      },
    },
  },
  {
    name: 'an empty _id on index',
    body: ndjson('{"index":{"_index":"a","_id":""}}', '{"a":1}'),
    response: {
      index: {
        _index: 'a',
        _id: '',
        status: 400,
        error: {
          type: 'illegal_argument_exception',
          reason: 'if _id is specified it must not be empty (bulk line 1; received "")',
        },
      },
    },
  },
  {
    name: 'a document that is an array',
    body: ndjson('{"index":{"_index":"a","_id":"1"}}', '[1,2]'),
    response: {
      index: {
        _index: 'a',
        _id: '1',
        status: 400,
        error: {
          type: 'document_parsing_exception',
          reason:
            'failed to parse: Malformed content, must start with an object (bulk line 2; received "[1,2]")',
        },
      },
    },
  },
  {
    name: 'a document that is a string',
    body: ndjson('{"create":{"_index":"a","_id":"1"}}', '"text"'),
    response: {
      create: {
        _index: 'a',
        _id: '1',
        status: 400,
        error: {
          type: 'document_parsing_exception',
          reason:
            'failed to parse: Malformed content, must start with an object (bulk line 2; received "\\"text\\"")',
        },
      },
    },
  },
  {
    name: 'an empty document line',
    body: ndjson('{"index":{"_index":"a","_id":"1"}}', ''),
    response: {
      index: {
        _index: 'a',
        _id: '1',
        status: 400,
        error: {
          type: 'document_parsing_exception',
          reason: 'failed to parse, document is empty (bulk line 2)',
        },
      },
    },
  },
];

describe('BulkRequestParser: errors that fail only their item', () => {
  it.each(ITEM_ERRORS)('$name', ({ body, response }) => {
    const result = parser.parse(body);
    const [item] = items(result);
    expect(result).toMatchObject({ ok: true, failedItems: 1 });
    expect(failedItemResponse(item!)).toEqual(response);
  });

  it('names the received document in a JSON error and keeps the other items', () => {
    const result = parser.parse(
      ndjson('{"index":{"_index":"a","_id":"1"}}', '{"a":', '{"index":{"_index":"a","_id":"2"}}', '{"a":2}'),
    );
    const [bad, good] = items(result);
    expect(bad!.error).toMatchObject({ type: 'document_parsing_exception', status: 400 });
    expect(bad!.error!.reason).toMatch(/^failed to parse: .+ \(bulk line 2; received "\{\\"a\\":"\)$/);
    expect(good).toMatchObject({ error: undefined, source: { a: 2 } });
  });

  it('refuses to render a response for an item that did not fail', () => {
    const [item] = items(parser.parse(ndjson('{"delete":{"_index":"a","_id":"1"}}')));
    expect(() => failedItemResponse(item!)).toThrow(InvalidArgumentError);
  });
});

/** Request-level failures: nothing runs; the body is Elasticsearch's `{type, reason}`. */
const REQUEST_ERRORS: readonly {
  readonly name: string;
  readonly body: string;
  readonly type: string;
  readonly reason: string | RegExp;
  readonly status?: number;
  readonly line?: number | undefined;
}[] = [
  {
    name: 'a body without the final newline',
    body: '{"index":{"_index":"a"}}\n{"a":1}',
    type: 'illegal_argument_exception',
    reason:
      'The bulk request must be terminated by a newline [\\n]; received "{\\"a\\":1}" after the last newline',
    line: 2,
  },
  {
    name: 'an action line that is not JSON',
    body: ndjson('{"index":{"_index":"a"}', '{}'),
    type: 'x_content_parse_exception',
    reason:
      /^Malformed action\/metadata line \[1\], not valid JSON \(.+\); received "\{\\"index\\":\{\\"_index\\":\\"a\\"\}"$/,
    line: 1,
  },
  {
    name: 'an action line that is an array',
    body: ndjson('["index"]', '{}'),
    type: 'illegal_argument_exception',
    reason:
      'Malformed action/metadata line [1], expected START_OBJECT but found [START_ARRAY]; received "[\\"index\\"]"',
    line: 1,
  },
  {
    name: 'an empty action object',
    body: ndjson('{}'),
    type: 'illegal_argument_exception',
    reason: 'Malformed action/metadata line [1], expected FIELD_NAME but found [END_OBJECT]',
    line: 1,
  },
  {
    name: 'an unknown action',
    body: ndjson('{"upsert":{"_index":"a"}}', '{}'),
    type: 'illegal_argument_exception',
    reason:
      'Malformed action/metadata line [1], expected field [create], [delete], [index] or [update] but found [upsert]',
    line: 1,
  },
  {
    name: 'an action whose value is not an object',
    body: ndjson('{"index":"a"}', '{}'),
    type: 'illegal_argument_exception',
    reason:
      'Malformed action/metadata line [1], expected START_OBJECT or END_OBJECT but found [VALUE_STRING]; received "a"',
    line: 1,
  },
  {
    name: 'two actions on one line',
    body: ndjson('{"index":{"_index":"a"},"delete":{"_index":"a","_id":"1"}}', '{}'),
    type: 'illegal_argument_exception',
    reason: 'Malformed action/metadata line [1], expected END_OBJECT but found [FIELD_NAME]',
    line: 1,
  },
  {
    name: 'the removed _type parameter',
    body: ndjson('{"index":{"_index":"a","_type":"_doc"}}', '{}'),
    type: 'illegal_argument_exception',
    reason: 'Action/metadata line [1] contains an unknown parameter [_type]',
    line: 1,
  },
  {
    name: 'an unknown metadata parameter',
    body: ndjson('{"delete":{"_index":"a","_id":"1","colour":"red"}}'),
    type: 'illegal_argument_exception',
    reason: 'Action/metadata line [1] contains an unknown parameter [colour]',
    line: 1,
  },
  {
    name: 'a metadata parameter Elasticsearch has but this server does not implement',
    body: ndjson('{"index":{"_index":"a","_id":"1","version":5}}', '{}'),
    type: 'illegal_argument_exception',
    reason:
      'Action/metadata line [1] contains a parameter [version] that this server does not support; received 5',
    line: 1,
  },
  {
    name: 'if_seq_no without if_primary_term, and compare-and-set on create',
    body: ndjson(
      '{"index":{"_index":"a","_id":"1","if_seq_no":5}}',
      '{}',
      '{"create":{"_index":"a","_id":"2","if_seq_no":1,"if_primary_term":1}}',
      '{}',
    ),
    type: 'action_request_validation_exception',
    reason:
      'Validation Failed: 1: ifSeqNo is set, but primary term is [0] (line 1);2: create operations do not support compare and set. use index instead (line 3);',
    line: undefined,
  },
  {
    name: 'a negative if_seq_no',
    body: ndjson('{"delete":{"_index":"a","_id":"1","if_seq_no":-1,"if_primary_term":1}}'),
    type: 'illegal_argument_exception',
    reason: 'Action/metadata line [1]: [if_seq_no] must be an integer >= 0; received -1',
    line: 1,
  },
  {
    name: 'an array as a metadata value',
    body: ndjson('{"index":{"_index":["a","b"]}}', '{}'),
    type: 'illegal_argument_exception',
    reason:
      'Malformed action/metadata line [1], expected a simple value for field [_index] but found [START_ARRAY]; received ["a","b"]',
    line: 1,
  },
  {
    name: 'a delete without _id (BulkRequest.validate)',
    body: ndjson('{"delete":{"_index":"a"}}'),
    type: 'action_request_validation_exception',
    reason: 'Validation Failed: 1: id is missing (line 1, action [delete]);',
  },
  {
    name: 'an update without _id and without doc, and an item without index, all collected',
    body: ndjson('{"update":{"_index":"a"}}', '{"doc_as_upsert":true}', '{"index":{}}', '{}'),
    type: 'action_request_validation_exception',
    reason:
      'Validation Failed: 1: id is missing (line 1, action [update]);2: doc must be specified if doc_as_upsert is enabled (line 2);3: index is missing (line 3);',
  },
  {
    name: 'an _id over 512 bytes',
    body: ndjson(`{"index":{"_index":"a","_id":"${'é'.repeat(257)}"}}`, '{}'),
    type: 'action_request_validation_exception',
    reason: `Validation Failed: 1: id [${'é'.repeat(61)}...] is too long, must be no longer than 512 bytes but was: 514 (line 1);`,
  },
  {
    name: 'an update body with an unknown field',
    body: ndjson('{"update":{"_index":"a","_id":"1"}}', '{"doc":{},"colour":"red"}'),
    type: 'x_content_parse_exception',
    reason: '[UpdateRequest] unknown field [colour] (line 2); received "red"',
    line: 2,
  },
  {
    name: 'an update whose doc is not an object',
    body: ndjson('{"update":{"_index":"a","_id":"1"}}', '{"doc":"x"}'),
    type: 'x_content_parse_exception',
    reason: '[UpdateRequest] doc doesn\'t support values of type: VALUE_STRING (line 2); received "x"',
    line: 2,
  },
  {
    name: 'an update with a script',
    body: ndjson('{"update":{"_index":"a","_id":"1"}}', '{"script":"ctx._source.n++"}'),
    type: 'illegal_argument_exception',
    reason:
      '[UpdateRequest] field [script] is not supported by this server (line 2); received "ctx._source.n++"',
    line: 2,
  },
  {
    name: 'an action whose document line is missing at the end',
    body: ndjson('{"index":{"_index":"a"}}'),
    type: 'illegal_argument_exception',
    reason: 'Malformed action/metadata line [1], the [index] action has no document line after it',
    line: 1,
  },
  {
    name: 'a body with no action',
    body: '\n\n',
    type: 'action_request_validation_exception',
    reason: 'Validation Failed: 1: no requests added;',
  },
];

describe('BulkRequestParser: errors that fail the whole request', () => {
  it.each(REQUEST_ERRORS)('$name', ({ body, type, reason, status = 400, line }) => {
    const result = parser.parse(body);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.type).toBe(type);
    expect(result.error.status).toBe(status);
    if (typeof reason === 'string') expect(result.error.reason).toBe(reason);
    else expect(result.error.reason).toMatch(reason);
    expect(result.error.line).toBe(line);
  });

  it('refuses an explicit _index when explicit indices are off', () => {
    const strict = new BulkRequestParser({ allowExplicitIndex: false });
    const result = strict.parse(ndjson('{"index":{"_index":"a"}}', '{}'), { index: 'b' });
    expect(result).toEqual({
      ok: false,
      error: {
        type: 'illegal_argument_exception',
        reason: 'explicit index in bulk is not allowed (line 1)',
        status: 400,
        line: 1,
      },
    });
    expect(strict.parse(ndjson('{"index":{}}', '{}'), { index: 'b' }).ok).toBe(true);
  });

  it('refuses a body over maxBytes (413) before reading it, counting UTF-8 bytes', () => {
    const body = ndjson('{"index":{"_index":"a"}}', '{"é":1}'); // 33 characters, 34 bytes
    expect(body).toHaveLength(33);
    const result = new BulkRequestParser({ maxBytes: 33 }).parse(body);
    expect(result).toMatchObject({
      ok: false,
      error: { status: 413, reason: 'the bulk request is 34 bytes, above the limit of 33 bytes (maxBytes)' },
    });
    expect(new BulkRequestParser({ maxBytes: 34 }).parse(body).ok).toBe(true);
  });

  it('refuses more than maxItems actions (413), naming the first line over the limit', () => {
    const two = new BulkRequestParser({ maxItems: 2 });
    const body = ndjson(
      '{"delete":{"_index":"a","_id":"1"}}',
      '{"delete":{"_index":"a","_id":"2"}}',
      '{"delete":{"_index":"a","_id":"3"}}',
    );
    expect(two.parse(body)).toMatchObject({ ok: false, error: { status: 413, line: 3 } });
    expect(new BulkRequestParser({ maxItems: 3 }).parse(body).ok).toBe(true);
  });

  it('refuses invalid UTF-8 bytes', () => {
    const result = parser.parse(Uint8Array.of(0x7b, 0xff, 0x7d, 0x0a));
    expect(result).toMatchObject({ ok: false, error: { type: 'x_content_parse_exception' } });
  });

  it('checks its limits once, at construction', () => {
    expect(() => new BulkRequestParser({ maxBytes: 0 })).toThrow(
      'maxBytes must be a positive integer (bytes); received 0',
    );
    expect(() => new BulkRequestParser({ maxItems: 1.5 })).toThrow(InvalidArgumentError);
  });
});

describe('document depth', () => {
  const nested = (depth: number) => `${'{"a":'.repeat(depth - 1)}{"b":1}${'}'.repeat(depth - 1)}`;

  it('accepts a document 20 levels deep and fails a deeper one as its item only, without recursing', () => {
    const result = parser.parse(
      ndjson(
        '{"index":{"_index":"i"}}',
        nested(20),
        '{"index":{"_index":"i"}}',
        nested(21),
        '{"index":{"_index":"i"}}',
        nested(100_000),
      ),
    );
    const list = items(result);
    expect(list[0]!.error).toBeUndefined();
    expect(list[1]!.error).toEqual({
      type: 'document_parsing_exception',
      reason: 'failed to parse: Limit of mapping depth [20] has been exceeded (bulk line 4)',
      status: 400,
    });
    expect(list[2]!.error?.type).toBe('document_parsing_exception');
  });

  it('fails an item whose document holds a metadata field at its top level, index and update alike', () => {
    const result = parser.parse(
      ndjson(
        '{"index":{"_index":"i"}}',
        '{"_id":"x","a":1}',
        '{"create":{"_index":"i","_id":"2"}}',
        '{"nested":{"_id":"fine"},"_doc_count":3}',
        '{"update":{"_index":"i","_id":"3"}}',
        '{"doc":{"_routing":"r"}}',
        '{"update":{"_index":"i","_id":"4"}}',
        '{"doc":{"a":1},"upsert":{"_source":{}}}',
      ),
    );
    const list = items(result);
    expect(list[0]!.error).toEqual({
      type: 'document_parsing_exception',
      reason:
        'failed to parse: field [_id] is a metadata field and cannot be added inside a document; ' +
        'give it as a request parameter (bulk line 2; received "x")',
      status: 400,
    });
    // Only the top level is checked (a nested `_id` is an ordinary field), and `_doc_count` may be set.
    expect(list[1]!.error).toBeUndefined();
    expect(list[2]!.error?.reason).toMatch(
      /^failed to parse: field \[_routing\] is a metadata field.*bulk line 6/,
    );
    expect(list[3]!.error?.reason).toMatch(/^failed to parse: field \[_source\] is a metadata field/);
  });

  it('fails the request for an update doc deeper than 20 levels', () => {
    const result = parser.parse(ndjson('{"update":{"_index":"i","_id":"1"}}', `{"doc":${nested(21)}}`));
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error.reason).toContain(
      'Limit of mapping depth [20] has been exceeded (bulk line 2)',
    );
  });
});
