/**
 * The life cycle of a `query-sandbox serve` process as the `cluster` launcher sees it.
 *
 * - Stop requests: SIGINT, SIGTERM, and the IPC channel to a parent that started the process with
 *   one (the launcher) going away, even by SIGKILL. They are watched from the very start of `serve`,
 *   before anything loads: a node told to stop (or orphaned) while it is still starting exits at once
 *   (nothing is served yet, and every file it writes is written atomically or replayed at the next
 *   start); once it serves, the graceful stop it hands over runs instead.
 * - Readiness: once it listens, the node tells the parent over the IPC channel
 *   (`ListeningMessage`), so that the launcher knows the server answering on the port is its child's
 *   and not another process's.
 */

/** `type` of the message a node sends its parent once it listens. */
export const LISTENING_MESSAGE_TYPE = 'query-sandbox:listening';

/** What a node sends its parent over the IPC channel once it listens. */
export interface ListeningMessage {
  readonly type: typeof LISTENING_MESSAGE_TYPE;
  readonly nodeId: string;
  readonly port: number;
}

export function isListeningMessage(value: unknown): value is ListeningMessage {
  const m = value as Partial<ListeningMessage> | null;
  return (
    typeof m === 'object' &&
    m !== null &&
    m.type === LISTENING_MESSAGE_TYPE &&
    typeof m.nodeId === 'string' &&
    typeof m.port === 'number'
  );
}

/** Tells the parent (if it started this process with an IPC channel, and is still there) that the node listens. */
export function notifyListening(nodeId: string, port: number): void {
  if (process.send === undefined || !process.connected) return;
  const message: ListeningMessage = { type: LISTENING_MESSAGE_TYPE, nodeId, port };
  // The callback takes a send error (the parent went away meanwhile: the disconnect watch stops us).
  process.send(message, undefined, {}, () => {});
}

export interface StopWatch {
  /** From now on a stop request runs `stop` (once) instead of exiting at once. */
  serving(stop: (reason: string) => Promise<void>): void;
}

/**
 * Watches SIGINT, SIGTERM and the parent's IPC channel (see module doc). Call it first thing.
 * @param onEarlyStop called with the reason just before the process exits for a stop requested
 *   before `serving` (a log line).
 */
export function watchStopRequests(onEarlyStop: (reason: string) => void = () => {}): StopWatch {
  let graceful: ((reason: string) => Promise<void>) | undefined;
  let requested = false;
  const request = (reason: string): void => {
    if (requested) return;
    requested = true;
    if (graceful !== undefined) {
      void graceful(reason);
      return;
    }
    onEarlyStop(reason);
    process.exit(0);
  };
  // `once`: a second Ctrl-C while stopping gets the default disposition and ends the process.
  process.once('SIGINT', () => request('SIGINT'));
  process.once('SIGTERM', () => request('SIGTERM'));
  if (process.send !== undefined) {
    process.once('disconnect', () => request('parent exited'));
    // The channel must not keep the process alive on its own; the server does.
    process.channel?.unref();
    // The parent may have gone before this ran (while the modules loaded): its disconnect was then
    // emitted to no listener.
    if (!process.connected) request('parent exited');
  }
  return {
    serving(stop) {
      graceful = stop;
    },
  };
}
