// Moved to src/common/is-plain-object.ts. This re-export keeps sandbox/ and scheduler/ unchanged while
// issues 14 and 18 edit them; it goes when their imports point at common/ (issue 15).
export { isPlainObject } from '../common/is-plain-object.js';
