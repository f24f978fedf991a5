/**
 * What the coordinator keeps about each data node it routes to: its search counters and its back-off
 * after a call that got no answer (shared by the search side and the remote placement of the writes).
 */

/** One data node's mutable state at the coordinator (read by `nodesStats()` as a snapshot). */
export interface DataNodeState {
  readonly nodeId: string;
  readonly url: string;
  requests: number;
  shardRequests: number;
  failures: number;
  retriedAway: number;
  /** Searches refused before fan-out because this node was over its admission limit, per resource. */
  readonly admissionRejections: { cpu: number; heap: number };
  /** Until when (Date.now(), ms) the node is ranked after the others; 0 when it answered last. */
  downUntilMs: number;
  /** The last call to the node got no answer or a failure (not a client error); false until one fails. */
  lastCallFailed: boolean;
}

/** The state of every data node, in routing-table order, each at zero. */
export function dataNodeStates(
  nodeIds: readonly string[],
  urls: ReadonlyMap<string, string>,
): ReadonlyMap<string, DataNodeState> {
  const nodes = new Map<string, DataNodeState>();
  for (const id of nodeIds) {
    nodes.set(id, {
      nodeId: id,
      url: urls.get(id)!,
      requests: 0,
      shardRequests: 0,
      failures: 0,
      retriedAway: 0,
      admissionRejections: { cpu: 0, heap: 0 },
      downUntilMs: 0,
      lastCallFailed: false,
    });
  }
  return nodes;
}
