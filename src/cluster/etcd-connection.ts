// Moved to src/etcd/etcd-connection.ts. This re-export serves sandbox/etcd-sandbox-store.ts and
// scheduler/etcd-query-priority-store.ts until issues 18 and 14 land; then their imports point at
// etcd/ and this file goes, closing the last sandbox/ -> cluster/ and scheduler/ -> cluster/ edges.
export type { EtcdConnection } from '../etcd/etcd-connection.js';
