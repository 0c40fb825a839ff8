import { causes } from './disk-full.js';

/** SQLSTATEs of a statement that met a table, column or function the database does not have. */
const MISSING_OBJECT = new Set(['42P01', '42703', '42883']);

/** Whether this one error (not its causes) met a table, column or function the database lacks. */
export function isMissingObject(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && MISSING_OBJECT.has(code);
}

/**
 * Whether `error` (or a cause of it) says the database has no os-audit schema, or an older one:
 * what `os-audit migrate` fixes.
 */
export function isSchemaBehind(error: unknown): boolean {
  for (const cause of causes(error)) if (isMissingObject(cause)) return true;
  return false;
}
