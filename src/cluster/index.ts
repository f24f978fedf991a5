/**
 * The cluster entry (`query-sandbox/cluster`): the coordinator and the cluster-state stores on etcd
 * (sandboxes, query-priority rules). Loads etcd3 and pino.
 */
export { Coordinator } from './coordinator.js';
export { EtcdConnection } from '../etcd/etcd-connection.js';
export { EtcdSandboxStore } from '../sandbox/etcd-sandbox-store.js';
export { EtcdQueryPriorityStore } from '../scheduler/etcd-query-priority-store.js';
