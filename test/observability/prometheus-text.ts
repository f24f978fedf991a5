/**
 * A strict parser of the Prometheus text exposition format 0.0.4, for tests: it throws on anything
 * the format does not allow, with the line number. (The npm parser `parse-prometheus-text-format`
 * was tried first: it accepted `a 1 2 3`, a value `x` and a family typed twice, so it cannot catch
 * a malformed exposition.)
 *
 * Checked: metric and label names (`[a-zA-Z_:][a-zA-Z0-9_:]*`, `[a-zA-Z_][a-zA-Z0-9_]*`, no `__`
 * prefix), label value escapes (`\\`, `\"`, `\n` only), values (Go `strconv.ParseFloat` syntax, with
 * `+Inf`, `-Inf`, `NaN` in any case), optional integer timestamps; `# HELP` and `# TYPE` at most once per family and before its
 * samples; a family's samples contiguous; no duplicate series; counters and histogram parts not
 * negative; histograms: `_bucket` series with an `le` label in increasing order per label set, counts
 * non-decreasing, a `+Inf` bucket equal to `_count`, and a `_sum` and `_count` for every label set.
 */

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Family {
  readonly name: string;
  readonly type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  readonly help: string | undefined;
  readonly samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
// Go's strconv.ParseFloat, which the format names: decimal floats, and inf/infinity (signed) and nan
// in any case (prom-client writes `Nan` for an event-loop lag not measured yet).
const FLOAT = /^(?:[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|inf|infinity)|nan)$/i;
const TYPES = ['counter', 'gauge', 'histogram', 'summary', 'untyped'] as const;

function parseValue(text: string, where: string): number {
  if (!FLOAT.test(text)) throw new Error(`${where}: invalid value ${JSON.stringify(text)}`);
  const lower = text.toLowerCase();
  if (lower === 'nan') return Number.NaN;
  if (/^\+?inf(inity)?$/.test(lower)) return Number.POSITIVE_INFINITY;
  if (/^-inf(inity)?$/.test(lower)) return Number.NEGATIVE_INFINITY;
  return Number(text);
}

/** Parses `{a="b",c="d"}` starting at `text[0] === '{'`; returns the labels and the rest of the line. */
function parseLabels(text: string, where: string): { labels: Record<string, string>; rest: string } {
  const labels: Record<string, string> = {};
  let i = 1;
  for (;;) {
    while (text[i] === ' ') i++;
    if (text[i] === '}') return { labels, rest: text.slice(i + 1) };
    const nameMatch = /^[^=\s]*/.exec(text.slice(i))![0];
    if (!LABEL_NAME.test(nameMatch) || nameMatch.startsWith('__')) {
      throw new Error(`${where}: invalid label name ${JSON.stringify(nameMatch)}`);
    }
    i += nameMatch.length;
    if (text[i] !== '=' || text[i + 1] !== '"')
      throw new Error(`${where}: expected ="… after label ${nameMatch}`);
    i += 2;
    let value = '';
    for (;;) {
      const ch = text[i];
      if (ch === undefined) throw new Error(`${where}: unterminated label value`);
      if (ch === '"') break;
      if (ch === '\\') {
        const next = text[i + 1];
        if (next === '\\') value += '\\';
        else if (next === '"') value += '"';
        else if (next === 'n') value += '\n';
        else throw new Error(`${where}: invalid escape \\${next ?? ''} in a label value`);
        i += 2;
        continue;
      }
      value += ch;
      i++;
    }
    i++;
    if (nameMatch in labels) throw new Error(`${where}: label ${nameMatch} given twice`);
    labels[nameMatch] = value;
    while (text[i] === ' ') i++;
    if (text[i] === ',') {
      i++;
      continue;
    }
    if (text[i] !== '}') throw new Error(`${where}: expected , or } after label ${nameMatch}`);
  }
}

/** The family a sample name belongs to, given the families typed so far. */
function familyOf(name: string, families: Map<string, Family>): string {
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (name.endsWith(suffix)) {
      const base = name.slice(0, -suffix.length);
      const f = families.get(base);
      if (f !== undefined && (f.type === 'histogram' || (f.type === 'summary' && suffix !== '_bucket')))
        return base;
    }
  }
  return name;
}

/** @throws Error naming the line for any departure from the format. */
export function parsePrometheusText(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const finished = new Set<string>();
  const seriesSeen = new Set<string>();
  let current: string | undefined;
  if (text.length > 0 && !text.endsWith('\n')) throw new Error('the exposition must end with a line feed');
  const lines = text.split('\n');
  lines.pop();
  const open = (name: string, where: string): Family => {
    let f = families.get(name);
    if (f === undefined) {
      f = { name, type: 'untyped', help: undefined, samples: [] };
      families.set(name, f);
    }
    if (current !== name) {
      if (finished.has(name)) throw new Error(`${where}: family ${name} is not contiguous`);
      if (current !== undefined) finished.add(current);
      current = name;
    }
    return f;
  };
  lines.forEach((line, index) => {
    const where = `line ${index + 1}`;
    if (line.trim() === '') return;
    if (line.startsWith('#')) {
      const m = /^#\s+(HELP|TYPE)\s+(\S+)(?:\s(.*))?$/.exec(line);
      if (m === null) return; // a plain comment
      const [, keyword, name, rest] = m as unknown as [string, string, string, string | undefined];
      if (!METRIC_NAME.test(name)) throw new Error(`${where}: invalid metric name ${JSON.stringify(name)}`);
      const f = open(name, where);
      if (keyword === 'HELP') {
        if (f.help !== undefined) throw new Error(`${where}: second HELP for ${name}`);
        (f as { help: string | undefined }).help = rest ?? '';
      } else {
        if (f.samples.length > 0) throw new Error(`${where}: TYPE of ${name} after its samples`);
        if ((f as { typed?: boolean }).typed === true) throw new Error(`${where}: second TYPE for ${name}`);
        if (!TYPES.includes(rest as (typeof TYPES)[number]))
          throw new Error(`${where}: unknown type ${rest}`);
        (f as { type: Family['type'] }).type = rest as Family['type'];
        (f as { typed?: boolean }).typed = true;
      }
      return;
    }
    const nameMatch = /^[^\s{]*/.exec(line)![0];
    if (!METRIC_NAME.test(nameMatch))
      throw new Error(`${where}: invalid metric name ${JSON.stringify(nameMatch)}`);
    let rest = line.slice(nameMatch.length);
    let labels: Record<string, string> = {};
    if (rest.startsWith('{')) ({ labels, rest } = parseLabels(rest, where));
    const fields = rest.trim().split(/\s+/);
    if (!rest.startsWith(' ') || fields.length < 1 || fields.length > 2 || fields[0] === '') {
      throw new Error(`${where}: expected a value and an optional timestamp`);
    }
    const value = parseValue(fields[0]!, where);
    if (fields.length === 2 && !/^-?\d+$/.test(fields[1]!))
      throw new Error(`${where}: invalid timestamp ${fields[1]}`);
    const family = open(familyOf(nameMatch, families), where);
    const key = `${nameMatch}${JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)))}`;
    if (seriesSeen.has(key))
      throw new Error(`${where}: duplicate series ${nameMatch}${JSON.stringify(labels)}`);
    seriesSeen.add(key);
    if ((family.type === 'counter' || family.type === 'histogram') && value < 0) {
      throw new Error(`${where}: negative value ${value} in ${family.type} ${family.name}`);
    }
    family.samples.push({ name: nameMatch, labels, value });
  });
  for (const f of families.values()) if (f.type === 'histogram') checkHistogram(f);
  return families;
}

function checkHistogram(f: Family): void {
  const groups = new Map<string, { buckets: Array<[number, number]>; sum?: number; count?: number }>();
  for (const s of f.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort(([a], [b]) => (a < b ? -1 : 1)));
    let g = groups.get(key);
    if (g === undefined) {
      g = { buckets: [] };
      groups.set(key, g);
    }
    if (s.name === `${f.name}_bucket`) {
      if (le === undefined) throw new Error(`histogram ${f.name}: a bucket without le`);
      g.buckets.push([parseValue(le, `histogram ${f.name} le`), s.value]);
    } else if (s.name === `${f.name}_sum`) g.sum = s.value;
    else if (s.name === `${f.name}_count`) g.count = s.value;
    else throw new Error(`histogram ${f.name}: unexpected sample ${s.name}`);
  }
  for (const [key, g] of groups) {
    if (g.sum === undefined || g.count === undefined)
      throw new Error(`histogram ${f.name}${key}: no _sum or _count`);
    for (let i = 1; i < g.buckets.length; i++) {
      if (!(g.buckets[i]![0] > g.buckets[i - 1]![0]))
        throw new Error(`histogram ${f.name}${key}: le not increasing`);
      if (g.buckets[i]![1] < g.buckets[i - 1]![1])
        throw new Error(`histogram ${f.name}${key}: bucket counts decrease`);
    }
    const last = g.buckets[g.buckets.length - 1];
    if (last === undefined || last[0] !== Number.POSITIVE_INFINITY)
      throw new Error(`histogram ${f.name}${key}: no +Inf bucket`);
    if (last[1] !== g.count)
      throw new Error(`histogram ${f.name}${key}: +Inf bucket ${last[1]} != _count ${g.count}`);
  }
}

/** The samples of `name` whose labels include `match`. */
export function samplesOf(
  families: Map<string, Family>,
  name: string,
  match: Readonly<Record<string, string>> = {},
): Sample[] {
  const family = families.get(name) ?? families.get(name.replace(/_(bucket|sum|count)$/, ''));
  return (family?.samples ?? []).filter(
    (s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v),
  );
}
