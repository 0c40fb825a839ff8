import { CompiledQuery } from 'kysely';
import { describe, expect, it } from 'vitest';
import { inlineParameters } from '../../src/db/statement-script.js';

const compiled = (text: string, parameters: unknown[]) => ({ ...CompiledQuery.raw(text), parameters });

describe('inlineParameters', () => {
  it('writes each parameter as a quoted literal, as pg would send its text', () => {
    expect(inlineParameters(compiled('SELECT $1::xid8, $2 * interval $3, $10', [...['12', 5000, "'1 ms'"], ...Array(6).fill(0), true]))).toBe(
      "SELECT '12'::xid8, '5000' * interval '''1 ms''', 'true'",
    );
    expect(inlineParameters(compiled('SELECT $1, $2, $3', [null, undefined, 12n]))).toBe("SELECT NULL, NULL, '12'");
  });

  it('escapes quotes and backslashes', () => {
    expect(inlineParameters(compiled('SELECT $1', ["o'wner\\x"]))).toBe("SELECT  E'o''wner\\\\x'");
  });

  it('leaves $n alone inside strings, quoted identifiers and comments', () => {
    const text = `SELECT '$1 ''$2''', "a$1", $1 -- $2\n, $2`;
    expect(inlineParameters(compiled(text, ['x', 'y']))).toBe(`SELECT '$1 ''$2''', "a$1", 'x' -- $2\n, 'y'`);
  });

  it('refuses what it cannot write as a literal, and missing parameters', () => {
    expect(() => inlineParameters(compiled('SELECT $1', [{}]))).toThrow(/object parameter/);
    expect(() => inlineParameters(compiled('SELECT $1', [Number.NaN]))).toThrow(/number parameter/);
    expect(() => inlineParameters(compiled('SELECT $2', ['x']))).toThrow(/refers to \$2 but has 1 parameters/);
  });
});
