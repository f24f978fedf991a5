// Moved to src/etcd/etcd-connection.ts. This re-export serves scheduler/etcd-query-priority-store.ts
// until issue 14 lands; then its import points at etcd/ and this file goes, closing the last
// scheduler/ -> cluster/ edge.
export type { EtcdConnection } from '../etcd/etcd-connection.js';
