/**
 * The admin token that guards sandbox changes: `Authorization: Bearer <token>`. Compared in constant
 * time. Without a configured token every change is refused.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { AdminForbiddenError, UnauthorizedError } from '../errors.js';

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Checks the `authorization` header against `token`. @throws UnauthorizedError (401), AdminForbiddenError (403). */
export function checkAdminToken(header: string | undefined, token: string | undefined): void {
  if (token === undefined) {
    throw new UnauthorizedError('sandbox changes are disabled: the server has no admin token configured');
  }
  if (header === undefined || header.length === 0) {
    throw new UnauthorizedError('sandbox changes need an admin token: send Authorization: Bearer <token>');
  }
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (match === null) {
    throw new UnauthorizedError('the Authorization header must read Bearer <token>');
  }
  // Hashing first makes the comparison constant-time whatever the lengths.
  if (!timingSafeEqual(digest(match[1]!), digest(token))) {
    throw new AdminForbiddenError('the admin token is wrong');
  }
}
