import { describe, expect, it } from 'vitest';
import {
  decodeEncodedWords,
  decodeQuotedPrintable,
  parseContentType,
  parseMail,
  parseMailDate,
  splitEntity,
  stripHtml,
} from '../../src/engine/mail-parser.js';
import { readCorpus } from '../../src/engine/spam-assassin-corpus.js';

describe('splitEntity', () => {
  it('reads headers up to the first blank line, unfolds continuation lines and skips the mbox line', () => {
    const raw =
      'From someone@example.com  Thu Aug 22 13:17:22 2002\nSubject: a long\n\tfolded  subject\nX-A: 1\nX-A: 2\n\nbody line\n\nmore';
    const { headers, body } = splitEntity(raw);
    expect(headers.get('subject')).toBe('a long\tfolded  subject');
    expect(headers.get('x-a')).toBe('1');
    expect(headers.has('from someone@example.com  thu aug 22 13')).toBe(false);
    expect(body).toBe('body line\n\nmore');
  });

  it('gives an empty body when there is no blank line, and no headers when the text starts with one', () => {
    expect(splitEntity('Subject: x').body).toBe('');
    const noHeaders = splitEntity('\nonly body');
    expect(noHeaders.headers.size).toBe(0);
    expect(noHeaders.body).toBe('only body');
  });
});

describe('decoders', () => {
  it('decodes quoted-printable with soft line breaks and charset', () => {
    expect(decodeQuotedPrintable('caf=E9 au l=\nait =3D 2')).toBe('café au lait = 2');
    expect(decodeQuotedPrintable('caf=C3=A9', 'utf-8')).toBe('café');
  });

  it('decodes RFC 2047 encoded words (Q and B), joining adjacent ones', () => {
    expect(decodeEncodedWords('=?iso-8859-1?Q?Caf=E9_cr=E8me?=')).toBe('Café crème');
    expect(decodeEncodedWords('=?utf-8?B?aGVsbG8=?= =?utf-8?B?IHdvcmxk?=')).toBe('hello world');
    expect(decodeEncodedWords('=?x-unknown?Q?a=E9?=')).toBe('aé');
  });

  it('strips HTML tags, comments, scripts and styles and decodes entities', () => {
    const text = stripHtml(
      '<html><style>p{color:red}</style><!-- hidden --><p>Fish &amp; chips&nbsp;&#36;5 &#x41;</p><script>x()</script></html>',
    );
    expect(text.replace(/\s+/g, ' ').trim()).toBe('Fish & chips $5 A');
  });

  it('parses content types with quoted parameters', () => {
    const type = parseContentType('Multipart/Alternative; boundary="----=_NextPart_000"; charset=utf-8');
    expect(type.mediaType).toBe('multipart/alternative');
    expect(type.params.get('boundary')).toBe('----=_NextPart_000');
    expect(type.params.get('charset')).toBe('utf-8');
    expect(parseContentType(undefined).mediaType).toBe('text/plain');
  });

  it('parses dates to epoch ms, ignoring comments, and gives null for garbage', () => {
    expect(parseMailDate('Thu, 22 Aug 2002 08:17:21 -0400 (EDT)')).toBe(Date.UTC(2002, 7, 22, 12, 17, 21));
    expect(parseMailDate('not a date')).toBeNull();
    expect(parseMailDate(undefined)).toBeNull();
  });
});

describe('parseMail', () => {
  it('decodes a quoted-printable HTML body and collapses whitespace', () => {
    const mail = parseMail(
      [
        'Subject: =?iso-8859-1?Q?Win_=A3100?=',
        'From: "Spammer"',
        ' <spam@example.com>',
        'Date: Wed, 21 Aug 2002 20:31:57 +0000',
        'Content-Type: text/html; charset="iso-8859-1"',
        'Content-Transfer-Encoding: quoted-printable',
        '',
        '<HTML><BODY><P style=3D"x">Make   money=',
        ' fast</P>',
        '<A href=3D"http://x">click here</A></BODY></HTML>',
      ].join('\r\n'),
    );
    expect(mail.subject).toBe('Win £100');
    expect(mail.from).toBe('"Spammer" <spam@example.com>');
    expect(mail.body).toBe('Make money fast click here');
    expect(mail.date).toBe(Date.UTC(2002, 7, 21, 20, 31, 57));
  });

  it('keeps the text parts of a multipart mail, prefers text/plain in alternatives and skips base64 attachments', () => {
    const raw = [
      'Subject: parts',
      'Content-Type: multipart/mixed; boundary="outer"',
      '',
      'preamble is ignored',
      '--outer',
      'Content-Type: multipart/alternative; boundary="inner"',
      '',
      '--inner',
      'Content-Type: text/plain',
      '',
      'plain version',
      '--inner',
      'Content-Type: text/html',
      '',
      '<b>html version</b>',
      '--inner--',
      '--outer',
      'Content-Type: application/octet-stream; name="x.exe"',
      'Content-Transfer-Encoding: base64',
      'Content-Disposition: attachment',
      '',
      'TVqQAAMAAAAEAAAA//8AALgAAAAAAAAAQAAAAAAAAAAA',
      '--outer',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.from('second text part').toString('base64'),
      '--outer--',
      'epilogue is ignored',
    ].join('\n');
    const mail = parseMail(raw);
    expect(mail.body).toBe('plain version second text part');
    expect(mail.date).toBeNull();
  });

  it('parses real corpus mails: every mail has a body, few lack a date', () => {
    const corpus = readCorpus(['spam-1', 'easy-ham-1'], 100);
    const docs = [...corpus.values()].flat();
    expect(docs).toHaveLength(200);
    expect(docs.filter((d) => d.body.length > 0).length).toBeGreaterThan(195);
    expect(docs.filter((d) => d.date !== null).length).toBeGreaterThan(190);
    const first = corpus.get('spam-1')![0]!;
    expect(first.id).toBe('00001');
    expect(first.subject).toBe('Life Insurance - Why Pay More?');
    expect(first.body).not.toMatch(/<[a-z]+[ >]/i);
    expect(first.body).not.toContain('=3D');
  });
});
