// Moved to src/common/is-plain-object.ts. This re-export keeps scheduler/query-priority.ts unchanged
// while issue 14 edits scheduler/; it goes when that import points at common/ (issue 15).
export { isPlainObject } from '../common/is-plain-object.js';
