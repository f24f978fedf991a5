/** The package's root directory (the one holding package.json), found from this module's location. */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    if (existsSync(path.join(dir, 'package.json')) && existsSync(path.join(dir, 'config'))) return dir;
    dir = path.dirname(dir);
  }
  return process.cwd();
}
