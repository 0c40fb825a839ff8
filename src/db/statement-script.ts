import type { CompiledQuery } from 'kysely';
import pg from 'pg';

/**
 * Runs statements as one script: a single simple-protocol query, so one round trip for all of
 * them, and each statement's result in order. The first statement that fails stops the
 * script, and the error is thrown; after a `BEGIN` in the script, the caller then rolls back.
 *
 * Parameters are written into the text as quoted literals. The server types a quoted literal
 * from its context, as it types a parameter sent apart, so a statement means the same either way.
 *
 * @example
 * ```ts
 * const [, moved] = await runScript(client, [sql`BEGIN`.compile(db), move.compile(db), sql`COMMIT`.compile(db)]);
 * ```
 */
export async function runScript(client: pg.ClientBase, statements: readonly CompiledQuery[]): Promise<pg.QueryResult[]> {
  const text = statements.map((statement) => inlineParameters(statement)).join(';\n');
  const results: pg.QueryResult | pg.QueryResult[] = await client.query(text);
  return Array.isArray(results) ? results : [results];
}

/**
 * The text of a compiled statement with each `$n` replaced by its parameter as a literal.
 * Quoted strings, quoted identifiers and comments are copied as they are.
 */
export function inlineParameters(statement: CompiledQuery): string {
  const { sql: text, parameters } = statement;
  let inlined = '';
  let copiedTo = 0;
  let at = 0;
  while (at < text.length) {
    const char = text[at]!;
    if (char === "'" || char === '"') {
      at = text.indexOf(char, at + 1);
      if (at < 0) throw new Error(`unterminated ${char} in a statement: ${text}`);
      at += 1;
    } else if (char === '-' && text[at + 1] === '-') {
      const end = text.indexOf('\n', at);
      at = end < 0 ? text.length : end;
    } else if (char === '$' && isDigit(text[at + 1])) {
      let end = at + 1;
      while (isDigit(text[end])) end += 1;
      const index = Number(text.slice(at + 1, end)) - 1;
      if (index >= parameters.length) throw new Error(`statement refers to $${index + 1} but has ${parameters.length} parameters`);
      inlined += text.slice(copiedTo, at) + literal(parameters[index]);
      at = copiedTo = end;
    } else {
      at += 1;
    }
  }
  return inlined + text.slice(copiedTo);
}

function isDigit(char: string | undefined): boolean {
  return char !== undefined && char >= '0' && char <= '9';
}

/** A parameter as the quoted literal of the text pg would send for it. */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'string') return pg.escapeLiteral(value);
  if (typeof value === 'number' && Number.isFinite(value)) return `'${value}'`;
  if (typeof value === 'bigint' || typeof value === 'boolean') return `'${value}'`;
  throw new TypeError(`a ${typeof value} parameter cannot be written into a script`);
}
