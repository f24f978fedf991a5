/**
 * A small, forgiving parser for raw RFC 822 / MIME mails (the SpamAssassin corpus): headers with
 * folded continuation lines, RFC 2047 encoded words, quoted-printable and base64 bodies, HTML
 * stripping, and multipart bodies (text parts kept, attachments skipped).
 */

/** The searchable view of one mail. */
export interface ParsedMail {
  /** `Subject:` header, decoded and with whitespace collapsed; '' when absent. */
  readonly subject: string;
  /** `From:` header, decoded and with whitespace collapsed; '' when absent. */
  readonly from: string;
  /** The readable text of the body (text parts, decoded, HTML stripped, whitespace collapsed). */
  readonly body: string;
  /** `Date:` header as epoch milliseconds, or null when it is absent or does not parse. */
  readonly date: number | null;
}

/** Header names (lower case) to their first value, unfolded. */
export type MailHeaders = ReadonlyMap<string, string>;

const MAX_DEPTH = 8;
const HEADER_LINE = /^([!-9;-~]+):[ \t]*(.*)$/;

/**
 * Parse one raw mail.
 *
 * @param raw the whole message, headers then a blank line then the body (LF or CRLF line ends;
 *   a leading mbox `From ` line is ignored).
 * @returns subject, from, body text and date (epoch ms or null). Never throws on malformed input:
 *   unknown encodings fall back to latin1, a missing blank line means an empty body.
 */
export function parseMail(raw: string): ParsedMail {
  const { headers, body } = splitEntity(raw.replace(/\r\n?/g, '\n'));
  return {
    subject: collapseWhitespace(decodeEncodedWords(headers.get('subject') ?? '')),
    from: collapseWhitespace(decodeEncodedWords(headers.get('from') ?? '')),
    body: collapseWhitespace(entityText(headers, body, 0)),
    date: parseMailDate(headers.get('date')),
  };
}

/**
 * Split an entity (LF line ends) into its headers and body at the first empty line.
 *
 * Continuation lines (starting with space or tab) are appended to the previous header; lines that
 * are neither a header nor a continuation (an mbox `From ` line) are skipped. When a name repeats,
 * the first value wins.
 */
export function splitEntity(text: string): { headers: MailHeaders; body: string } {
  const headers = new Map<string, string>();
  let end = text.startsWith('\n') ? 0 : text.indexOf('\n\n');
  if (end < 0) end = text.length;
  const block = text.slice(0, end);
  const body = end < text.length ? text.slice(end + (text.startsWith('\n') ? 1 : 2)) : '';
  let name: string | undefined;
  let value = '';
  const flush = (): void => {
    if (name !== undefined && !headers.has(name)) headers.set(name, value.trim());
    name = undefined;
  };
  for (const line of block.split('\n')) {
    if ((line.startsWith(' ') || line.startsWith('\t')) && name !== undefined) {
      value += line;
      continue;
    }
    flush();
    const match = HEADER_LINE.exec(line);
    if (match) {
      name = match[1]!.toLowerCase();
      value = match[2]!;
    }
  }
  flush();
  return { headers, body };
}

/** A parsed `Content-Type` value: lower-case `type/subtype` and its parameters (names lower case). */
export interface ContentType {
  readonly mediaType: string;
  readonly params: ReadonlyMap<string, string>;
}

/** Parse a `Content-Type` header value; `text/plain` when absent or unreadable. */
export function parseContentType(value: string | undefined): ContentType {
  const params = new Map<string, string>();
  if (!value) return { mediaType: 'text/plain', params };
  const [head = '', ...rest] = value.split(';');
  const mediaType = head.trim().toLowerCase();
  for (const piece of rest) {
    const eq = piece.indexOf('=');
    if (eq < 0) continue;
    const key = piece.slice(0, eq).trim().toLowerCase();
    let val = piece.slice(eq + 1).trim();
    if (val.startsWith('"')) val = val.slice(1, val.indexOf('"', 1) > 0 ? val.indexOf('"', 1) : undefined);
    if (key && !params.has(key)) params.set(key, val);
  }
  return { mediaType: mediaType.includes('/') ? mediaType : 'text/plain', params };
}

function entityText(headers: MailHeaders, body: string, depth: number): string {
  const type = parseContentType(headers.get('content-type'));
  const encoding = (headers.get('content-transfer-encoding') ?? '').trim().toLowerCase();
  if (type.mediaType.startsWith('multipart/')) {
    const boundary = type.params.get('boundary');
    if (!boundary || depth >= MAX_DEPTH) return '';
    const parts = splitMultipart(body, boundary).map((part) => splitEntity(part));
    let chosen = parts;
    if (type.mediaType === 'multipart/alternative') {
      // The same content in several forms: keep one (plain text when there is one) so terms do not count twice.
      const plain = parts.find(
        (p) => parseContentType(p.headers.get('content-type')).mediaType === 'text/plain',
      );
      const first = plain ?? parts.find((p) => isTextual(p.headers)) ?? parts[0];
      chosen = first ? [first] : [];
    }
    return chosen.map((p) => entityText(p.headers, p.body, depth + 1)).join(' ');
  }
  if (type.mediaType === 'message/rfc822' && depth < MAX_DEPTH) {
    const inner = splitEntity(body);
    const subject = decodeEncodedWords(inner.headers.get('subject') ?? '');
    return `${subject} ${entityText(inner.headers, inner.body, depth + 1)}`;
  }
  if (!type.mediaType.startsWith('text/')) return '';
  const charset = type.params.get('charset') ?? 'latin1';
  let text: string;
  if (encoding === 'quoted-printable') text = decodeQuotedPrintable(body, charset);
  else if (encoding === 'base64') text = decodeBytes(Buffer.from(body, 'base64'), charset);
  else text = body;
  return type.mediaType === 'text/html' ? stripHtml(text) : text;
}

function isTextual(headers: MailHeaders): boolean {
  return parseContentType(headers.get('content-type')).mediaType.startsWith('text/');
}

/** The parts between `--boundary` lines (preamble and epilogue dropped). */
function splitMultipart(body: string, boundary: string): string[] {
  const delimiter = `--${boundary}`;
  const parts: string[] = [];
  let current: string[] | undefined;
  for (const line of body.split('\n')) {
    if (line.startsWith(delimiter)) {
      if (current) parts.push(current.join('\n'));
      const closing = line.slice(delimiter.length).startsWith('--');
      current = closing ? undefined : [];
      if (closing) break;
      continue;
    }
    current?.push(line);
  }
  if (current) parts.push(current.join('\n'));
  return parts;
}

/**
 * Decode a quoted-printable body: soft line breaks (`=` at end of line) are removed and runs of
 * `=XX` escapes are decoded as bytes in `charset` (latin1 when unknown). Literal characters are kept.
 */
export function decodeQuotedPrintable(text: string, charset = 'latin1'): string {
  return text.replace(/=[ \t]*\n/g, '').replace(/(?:=[0-9A-Fa-f]{2})+/g, (run) => {
    const bytes = Buffer.alloc(run.length / 3);
    for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(run.slice(i * 3 + 1, i * 3 + 3), 16);
    return decodeBytes(bytes, charset);
  });
}

/** Decode RFC 2047 encoded words (`=?charset?Q|B?text?=`) in a header value. */
export function decodeEncodedWords(value: string): string {
  return value
    .replace(/(\?=)\s+(=\?)/g, '$1$2')
    .replace(/=\?([^?\s]+)\?([BbQq])\?([^?\s]*)\?=/g, (_all, charset: string, kind: string, data: string) => {
      if (kind === 'B' || kind === 'b') return decodeBytes(Buffer.from(data, 'base64'), charset);
      return decodeQuotedPrintable(data.replace(/_/g, ' '), charset);
    });
}

/**
 * Remove HTML markup: script/style elements and comments entirely, other tags replaced by a space;
 * common named entities and numeric character references decoded.
 */
export function stripHtml(html: string): string {
  return html
    .replace(/<!--[\s\S]*?-->/g, ' ')
    .replace(/<(script|style)\b[\s\S]*?<\/\1\s*>/gi, ' ')
    .replace(/<[^>]*>/g, ' ')
    .replace(/&(#[xX][0-9a-fA-F]+|#[0-9]+|[a-zA-Z]+);/g, decodeEntity);
}

const NAMED_ENTITIES: Readonly<Record<string, string>> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  copy: '©',
  reg: '®',
  trade: '™',
  euro: '€',
  pound: '£',
};

function decodeEntity(all: string, ref: string): string {
  if (ref.startsWith('#')) {
    const code =
      ref[1] === 'x' || ref[1] === 'X'
        ? Number.parseInt(ref.slice(2), 16)
        : Number.parseInt(ref.slice(1), 10);
    return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : ' ';
  }
  return NAMED_ENTITIES[ref.toLowerCase()] ?? all;
}

/** Decode bytes in a charset; unknown charsets fall back to latin1. */
function decodeBytes(bytes: Uint8Array, charset: string): string {
  try {
    return new TextDecoder(charset.trim().toLowerCase() || 'latin1').decode(bytes);
  } catch {
    return Buffer.from(bytes).toString('latin1');
  }
}

/** Collapse runs of whitespace to one space and trim. */
export function collapseWhitespace(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * Parse a `Date:` header value to epoch ms.
 *
 * @returns epoch milliseconds, or null when absent or unparseable (comments such as `(EDT)` are ignored).
 */
export function parseMailDate(value: string | undefined): number | null {
  if (!value) return null;
  const cleaned = value.replace(/\([^)]*\)/g, ' ').trim();
  const ms = Date.parse(cleaned);
  return Number.isFinite(ms) ? ms : null;
}
