/** Whether a TCP port can be listened on, checked by listening on it for a moment. */
import net from 'node:net';

/**
 * Listens on `host:port` exclusively and closes again.
 * @returns undefined when it could listen, else the error code (`EADDRINUSE`, `EADDRNOTAVAIL`, ...).
 */
export function probePort(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve(undefined)));
  });
}

/** True when `count` ports from `base` on 127.0.0.1 can all be listened on. */
export async function portsFree(base: number, count: number): Promise<boolean> {
  for (let port = base; port < base + count; port++)
    if ((await probePort('127.0.0.1', port)) !== undefined) return false;
  return true;
}
