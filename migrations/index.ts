import type { Migration } from 'kysely';
import * as eventStore from './0001-event-store.js';
import * as osSnapshotProjection from './0002-os-snapshot-projection.js';
import * as projectorFastPath from './0003-projector-fast-path.js';
import * as dashboardViews from './0004-dashboard-views.js';
import * as roles from './0005-roles.js';
import * as batchRequirements from './0006-batch-requirements.js';
import * as storeAsWritten from './0007-store-as-written.js';
import * as kernelJournal from './0008-kernel-journal.js';
import * as contiguousSessionLogs from './0009-contiguous-session-logs.js';
import * as projectionVersions from './0010-projection-versions.js';
import * as replannedLogChecks from './0011-replanned-log-checks.js';
import * as distributedTables from './0012-distributed-tables.js';
import * as citusWriterColumns from './0013-citus-writer-columns.js';
import * as sessionsByLastActivity from './0014-sessions-by-last-activity.js';
import * as plannedOnceLogCheck from './0015-planned-once-log-check.js';
import * as sealedHistory from './0016-sealed-history.js';
import * as eventChain from './0017-event-chain.js';
import * as kernelJournalGrants from './0018-kernel-journal-grants.js';
import * as turnReadInOnePass from './0019-turn-read-in-one-pass.js';
import * as chainPredecessorWithoutHistory from './0020-chain-predecessor-without-history.js';

/**
 * The engine's migrations (the event store, the projector's bookkeeping, the roles), by name,
 * applied in name order, before each projection's own (see `migrateToLatest`). The OS
 * snapshot's tables came before projections had migrations of their own: 0002, 0004, 0005 and
 * 0007 of earlier os-audit versions made them, and change them still where those did.
 * Imported statically (not read from the folder at run time) so that the same list runs from
 * the sources, the build and the tests; `test/db/migrated-schema.int.spec.ts` fails when a
 * file of this folder is missing here.
 */
export const migrations: Record<string, Migration> = {
  '0001-event-store': eventStore,
  '0002-os-snapshot-projection': osSnapshotProjection,
  '0003-projector-fast-path': projectorFastPath,
  '0004-dashboard-views': dashboardViews,
  '0005-roles': roles,
  '0006-batch-requirements': batchRequirements,
  '0007-store-as-written': storeAsWritten,
  '0008-kernel-journal': kernelJournal,
  '0009-contiguous-session-logs': contiguousSessionLogs,
  '0010-projection-versions': projectionVersions,
  '0011-replanned-log-checks': replannedLogChecks,
  '0012-distributed-tables': distributedTables,
  '0013-citus-writer-columns': citusWriterColumns,
  '0014-sessions-by-last-activity': sessionsByLastActivity,
  '0015-planned-once-log-check': plannedOnceLogCheck,
  '0016-sealed-history': sealedHistory,
  '0017-event-chain': eventChain,
  '0018-kernel-journal-grants': kernelJournalGrants,
  '0019-turn-read-in-one-pass': turnReadInOnePass,
  '0020-chain-predecessor-without-history': chainPredecessorWithoutHistory,
};
