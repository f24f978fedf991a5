// Moved to src/common/json-error-position.ts. This re-export keeps sandbox/ unchanged while issue 18
// edits it; it goes when sandbox-file.ts imports common/ (issue 15).
export { describeJsonError, jsonErrorPosition } from '../common/json-error-position.js';
