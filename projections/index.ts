import type { FoldedProjection } from '../src/projection-api.js';
import { osSnapshotProjection } from './os-snapshot/os-snapshot-projection.js';
import { osSnapshotV0260Projection } from './os-snapshot-v0-2-60/os-snapshot-v0-2-60-projection.js';

/**
 * The projections os-audit ships, in order: the CLI migrates and runs them all unless
 * `--projections MODULE` names another list; the first is `os-audit snapshot`'s default.
 *
 * @example
 * ```ts
 * // my-projections.mjs, for `os-audit --projections ./my-projections.mjs up`
 * import { builtInProjections } from 'os-audit';
 * import { toolCallsProjection } from './tool-calls.mjs';
 * export default [...builtInProjections, toolCallsProjection];
 * ```
 */
export const builtInProjections: readonly FoldedProjection[] = [osSnapshotProjection, osSnapshotV0260Projection];
