/**
 * Discovery at a coordinator's start: every data node is asked `GET /_internal/node_info` until it
 * answers (every 250 ms, each try with a 5 s time-out), so the coordinator may start before or with
 * its data nodes. While a node does not answer, a warning naming it is logged (after 3 s, or half the
 * time-out when that is shorter, then every 10 s); after the time-out the start fails naming the node
 * and its last failure. A node that answers
 * with another id than the cluster file lists, or two addresses that answer with one id, are errors
 * at once.
 */
import type pino from 'pino';
import type { DataNodeAddress } from './cluster-spec.js';
import { fetchNodeInfo } from './data-node-client.js';
import type { NodeInfo } from './internal-protocol.js';
import { ClusterDiscoveryError } from '../errors.js';

const RETRY_MS = 250;
/** First warning about a node that does not answer, ms after discovery started. */
const FIRST_WARNING_MS = 3000;
/** Then one warning per node this often, ms. */
const WARNING_EVERY_MS = 10_000;

export { ClusterDiscoveryError };

/** A failed node-info call in a few words (`ECONNREFUSED`, `no answer within 5000 ms`, the HTTP status). */
function describeFailure(error: unknown, timeoutMs: number): string {
  const e = error as { name?: unknown; message?: unknown; cause?: { code?: unknown; message?: unknown } };
  if (e?.name === 'TimeoutError') return `no answer within ${timeoutMs} ms`;
  if (typeof e?.cause?.code === 'string') return e.cause.code;
  if (typeof e?.cause?.message === 'string') return e.cause.message;
  return String(e?.message ?? error);
}

/**
 * Asks every data node for its node info, in parallel; resolves in the order of `dataNodes`.
 * @param onAnswer called with each answering node's id and its `Resource_Usage_Stats` value.
 * @throws ClusterDiscoveryError when a node has not answered within `timeoutMs` (with the last
 *   failure), answers with another id than its listed one, or two nodes answer with one id.
 */
export async function discoverDataNodes(
  dataNodes: readonly DataNodeAddress[],
  timeoutMs: number,
  onAnswer: (nodeId: string, statsHeader: string | undefined) => void,
  log: pino.Logger,
  secret: string | undefined,
): Promise<NodeInfo[]> {
  const started = performance.now();
  const deadline = started + timeoutMs;
  const callTimeoutMs = Math.min(5000, timeoutMs);
  const infos = await Promise.all(
    dataNodes.map(async (node): Promise<NodeInfo> => {
      let nextWarningMs = Math.min(FIRST_WARNING_MS, timeoutMs / 2);
      for (let attempt = 1; ; attempt++) {
        let answer: Awaited<ReturnType<typeof fetchNodeInfo>>;
        try {
          answer = await fetchNodeInfo(node.url, callTimeoutMs, secret);
        } catch (error) {
          const failure = describeFailure(error, callTimeoutMs);
          const now = performance.now();
          if (now >= deadline) {
            throw new ClusterDiscoveryError(
              node.url,
              `data node ${node.url}${node.id === undefined ? '' : ` [${node.id}]`} did not answer discovery ` +
                `within ${timeoutMs} ms (${attempt} tries; last: ${failure})`,
            );
          }
          if (now - started >= nextWarningMs) {
            nextWarningMs += WARNING_EVERY_MS;
            log.warn(
              {
                node: node.id,
                url: node.url,
                failure,
                waitedMs: Math.round(now - started),
                timeoutMs,
              },
              `data node ${node.url} does not answer discovery yet (${failure}); retrying until the time-out`,
            );
          }
          await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
          continue;
        }
        const { info, statsHeader } = answer;
        if (node.id !== undefined && info.node_id !== node.id) {
          throw new ClusterDiscoveryError(
            node.url,
            `data node ${node.url} answers as [${info.node_id}], but the cluster lists it as [${node.id}]`,
          );
        }
        onAnswer(info.node_id, statsHeader);
        log.info({ node: info.node_id, url: node.url, copies: info.copies.length }, 'data node discovered');
        return info;
      }
    }),
  );
  const seen = new Map<string, string>();
  infos.forEach((info, i) => {
    const url = dataNodes[i]!.url;
    const first = seen.get(info.node_id);
    if (first !== undefined) {
      throw new ClusterDiscoveryError(
        url,
        `data nodes ${first} and ${url} both answer as [${info.node_id}]: list each data node once`,
      );
    }
    seen.set(info.node_id, url);
  });
  return infos;
}
