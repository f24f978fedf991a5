/**
 * The credentials a `query-sandbox serve` node accepts and sends, from the environment:
 *
 * - the admin token (`QUERY_SANDBOX_ADMIN_TOKEN`, or one made once the node runs: `admin-token.ts`);
 * - the writer token (`QUERY_SANDBOX_WRITER_TOKEN`, optional): documents and `_bulk` only;
 * - the cluster secret (`QUERY_SANDBOX_CLUSTER_SECRET`): what data nodes and their coordinator present
 *   to each other on `/_internal/*`; required for `--role data` and `--role coordinator` (the cluster
 *   launcher makes one), unused by a single node.
 *
 * Each is at least 16 characters without spaces; the three must differ, so that one role's token never
 * opens another's routes.
 */
import { InvalidArgumentError } from '../errors.js';
import { checkTokenText } from './admin-token.js';
import type { ServeRole } from './serve-options.js';

/** The credentials of a node besides its admin token (which `resolveAdminToken` makes once it runs). */
export interface NodeSecrets {
  readonly writerToken: string | undefined;
  readonly clusterSecret: string | undefined;
}

/**
 * Reads and checks the writer token and the cluster secret, before anything starts.
 * @throws InvalidArgumentError naming the variable: too short, spaces, equal to another credential
 *   (the admin token included, when it comes from the environment), or `QUERY_SANDBOX_CLUSTER_SECRET`
 *   missing on a data node or a coordinator.
 */
export function readNodeSecrets(env: NodeJS.ProcessEnv, role: ServeRole): NodeSecrets {
  const text = (name: string): string | undefined => {
    const value = env[name];
    return value === undefined || value === '' ? undefined : checkTokenText(name, value);
  };
  const adminToken = text('QUERY_SANDBOX_ADMIN_TOKEN');
  const writerToken = text('QUERY_SANDBOX_WRITER_TOKEN');
  const clusterSecret = text('QUERY_SANDBOX_CLUSTER_SECRET');
  if (role !== 'single' && clusterSecret === undefined) {
    throw new InvalidArgumentError(
      'QUERY_SANDBOX_CLUSTER_SECRET',
      `is required with --role ${role}: the nodes of a cluster authenticate their internal calls with it ` +
        '(query-sandbox cluster makes one; set the same value of 16 characters or more on every node)',
      undefined,
    );
  }
  const distinct = (
    name: string,
    value: string | undefined,
    other: string,
    otherValue: string | undefined,
  ) => {
    if (value !== undefined && value === otherValue) {
      throw new InvalidArgumentError(
        name,
        `must differ from ${other}`,
        `${value.slice(0, 4)}... (${value.length} characters)`,
      );
    }
  };
  distinct('QUERY_SANDBOX_WRITER_TOKEN', writerToken, 'QUERY_SANDBOX_ADMIN_TOKEN', adminToken);
  distinct('QUERY_SANDBOX_CLUSTER_SECRET', clusterSecret, 'QUERY_SANDBOX_ADMIN_TOKEN', adminToken);
  distinct('QUERY_SANDBOX_CLUSTER_SECRET', clusterSecret, 'QUERY_SANDBOX_WRITER_TOKEN', writerToken);
  return { writerToken, clusterSecret };
}
