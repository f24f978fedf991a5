/**
 * Discovery at a coordinator's start: every data node is asked `GET /_internal/node_info` until it
 * answers (every 250 ms, each try with a 5 s time-out), so the coordinator may start before or with
 * its data nodes. A node that answers with another id than the cluster file lists is an error at once.
 */
import type pino from 'pino';
import type { DataNodeAddress } from './cluster-spec.js';
import { fetchNodeInfo } from './data-node-client.js';
import type { NodeInfo } from './internal-protocol.js';

const RETRY_MS = 250;

/**
 * Asks every data node for its node info, in parallel; resolves in the order of `dataNodes`.
 * @param onAnswer called with each answering node's id and its `Resource_Usage_Stats` value.
 * @throws Error when a node has not answered within `timeoutMs` (with the last failure), or answers
 *   with another id than its listed one.
 */
export async function discoverDataNodes(
  dataNodes: readonly DataNodeAddress[],
  timeoutMs: number,
  onAnswer: (nodeId: string, statsHeader: string | undefined) => void,
  log: pino.Logger,
): Promise<NodeInfo[]> {
  const deadline = performance.now() + timeoutMs;
  return Promise.all(
    dataNodes.map(async (node): Promise<NodeInfo> => {
      for (let attempt = 1; ; attempt++) {
        let answer: Awaited<ReturnType<typeof fetchNodeInfo>>;
        try {
          answer = await fetchNodeInfo(node.url, Math.min(5000, timeoutMs));
        } catch (error) {
          if (performance.now() >= deadline) {
            throw new Error(
              `data node ${node.url} did not answer discovery within ${timeoutMs} ms (${attempt} tries): ${(error as Error).message}`,
            );
          }
          await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
          continue;
        }
        const { info, statsHeader } = answer;
        if (node.id !== undefined && info.node_id !== node.id) {
          throw new Error(
            `data node ${node.url} answers as [${info.node_id}], but the cluster lists it as [${node.id}]`,
          );
        }
        onAnswer(info.node_id, statsHeader);
        log.info({ node: info.node_id, url: node.url, copies: info.copies.length }, 'data node discovered');
        return info;
      }
    }),
  );
}
