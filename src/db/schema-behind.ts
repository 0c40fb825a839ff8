import { causes } from './disk-full.js';

/** SQLSTATEs of a statement that met a table, column or function the database does not have. */
const MISSING_OBJECT = new Set(['42P01', '42703', '42883']);

/**
 * Whether `error` (or a cause of it) says the database has no os-audit schema, or an older one:
 * what `os-audit migrate` fixes.
 */
export function isSchemaBehind(error: unknown): boolean {
  for (const cause of causes(error)) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string' && MISSING_OBJECT.has(code)) return true;
  }
  return false;
}
