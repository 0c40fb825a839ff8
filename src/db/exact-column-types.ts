import type { ColumnType } from 'kysely';
import type { JsonValue } from '../json/json-value.js';

/**
 * Column types as `openDatabase` reads them (see its type parsers), used by the generated
 * `schema.ts` through `.kysely-codegenrc.json`: `bigint` columns read as numbers, `json` and
 * `jsonb` through the lossless parser.
 */
export declare namespace ExactColumnTypes {
  type Int8 = ColumnType<number, bigint | number | string, bigint | number | string>;
  type Json = JsonValue;
}
