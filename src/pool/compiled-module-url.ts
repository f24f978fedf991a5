/**
 * Where a compiled module lives. Worker threads cannot load TypeScript on Node 20, so when a module
 * that spawns workers runs from source (tests under vitest) its sibling `.js` file does not exist;
 * the tsc output under `dist/` is used instead.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * file: URL of `relative` (a `.js` path) resolved against `baseUrl` (an `import.meta.url`), or of its
 * compiled twin under `<root>/dist/src/...` when the sibling does not exist.
 * @throws Error when neither exists (run `npm run build`).
 */
export function compiledModuleUrl(relative: string, baseUrl: string): string {
  const sibling = fileURLToPath(new URL(relative, baseUrl));
  if (existsSync(sibling)) return pathToFileURL(sibling).href;
  const at = sibling.lastIndexOf('/src/');
  const compiled = at < 0 ? sibling : `${sibling.slice(0, at)}/dist${sibling.slice(at)}`;
  if (!existsSync(compiled)) {
    throw new Error(`compiled module not found at ${compiled}: run \`npm run build\` first`);
  }
  return pathToFileURL(compiled).href;
}
