/** `--etcd` endpoint lists, parsed without loading the etcd client (the CLI parses flags for every role). */
import { InvalidArgumentError } from '../errors.js';

/** `--etcd a,b`: endpoints as `http://host:port`. @throws InvalidArgumentError naming `flag`. */
export function parseEtcdEndpoints(text: string, flag = '--etcd'): string[] {
  const parts = text
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  if (parts.length === 0)
    throw new InvalidArgumentError(flag, 'must list etcd endpoints (host:port,...)', text);
  return parts.map((part) => {
    let url: URL;
    try {
      url = new URL(part.includes('://') ? part : `http://${part}`);
    } catch {
      throw new InvalidArgumentError(flag, 'must list etcd endpoints as host:port or http://host:port', text);
    }
    if (url.protocol !== 'http:' || url.port === '' || (url.pathname !== '/' && url.pathname !== '')) {
      throw new InvalidArgumentError(
        flag,
        'must list etcd endpoints as host:port or http://host:port (with a port, no path)',
        text,
      );
    }
    return `http://${url.host}`;
  });
}
