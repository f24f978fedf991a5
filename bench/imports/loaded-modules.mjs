// Prints, as one JSON line, every module that importing `argv[2]` (a specifier, e.g. `query-sandbox`
// or `query-sandbox/engine`) loads: ES modules through a resolve hook, CommonJS ones from the
// require cache (Node 20 runs no hooks for require() inside CommonJS). Run from the project.
import { createRequire, register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';

const specifier = process.argv[2];
const { port1, port2 } = new MessageChannel();
const esm = new Set();
port1.on('message', (url) => esm.add(url));
port1.unref();
register('./record-resolve.mjs', import.meta.url, { data: { port: port2 }, transferList: [port2] });
await import(specifier);
// Let the last hook messages arrive.
await new Promise((resolve) => setTimeout(resolve, 100));
const cjs = Object.keys(createRequire(import.meta.url).cache).map((file) => `file://${file}`);
const all = [...new Set([...esm, ...cjs])].filter((url) => url.startsWith('file:')).sort();
console.log(JSON.stringify({ specifier, modules: all }));
