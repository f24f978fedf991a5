// Moved to src/common/durable-file.ts. This re-export keeps scheduler/query-priority-store.ts unchanged
// while issue 14 edits scheduler/; it goes when that import points at common/ (issue 15).
export { syncDirectory, writeFileAtomically } from './common/durable-file.js';
