/**
 * `@memory-mounter/core/engine`: the engine's parts, for a host that runs its own loop instead
 * of `MemoryMounter`'s. One pass of a store is:
 *
 *   1. open the store folder (`StoreFolder.open`): every disk access of the pass goes through
 *      it, confined to the folder (never through a link the agent planted);
 *   2. scan it (`scanStore`), and judge it (`assessFolder`: a wiped or emptied folder is
 *      distrusted, never taken as "delete everything");
 *   3. read the store (`StoreClient.list`) and index it (`indexRemote`: paths a mount cannot
 *      hold are skipped);
 *   4. decide (`decidePass`, pure): fold in writes whose outcome was unknown
 *      (`settleUnknownWrites`), take up a cleared baseline after a re-download (`takeUpAgreed`),
 *      and plan (`planStore`: one `classify` row per path, which side changed since the
 *      baseline; deletions capped by `deleteCap`; conflicts by `resolveConflict`);
 *   5. apply the plan's transfers (`applyPlan`): I/O only, through the two seams, one
 *      `Outcome` per transfer (done, skipped with a code, failed with a StoreError kind, cut
 *      off); it writes no state;
 *   6. settle (`settle`, pure): fold the outcomes into the state the next pass starts from
 *      (the baseline moves only for what was applied, path by path) and build the pass's report;
 *      then make that the state (docs/architecture.md: the commit step).
 *
 * Renames: give `planStore` the ids the baseline was agreed with (`PlanInput.baselineIds`) and,
 * after each settle, refresh them with `baselineIdsAfter` from what the store now holds; a
 * memory renamed on either side then keeps its id (`rename_local`, `rename_remote` transfers).
 *
 * Absences: a memory missing from one listing is not taken for deleted (`judgeAbsence`): give
 * `planStore` what corroborates absences (`PlanInput.absence`: ids the store said are deleted, the
 * ids it holds, the listing's serial, and `SyncState.absentFrom`); without it every
 * `remote_missing` delete asks the store first (`DeleteLocal.corroborate`).
 *
 * `SyncState` is what a pass carries to the next (`emptySyncState()` before the first). A
 * push-only pass (finalize's flush) is `pushOnlyView(plan)`. The library a host normally uses
 * is the package's main entry, `@memory-mounter/core`.
 */
export { planStore, planActions, pushOnlyView, classify, deleteCap, settleUnknownWrites } from './decide/plan.js';
export type {
  Action,
  Transfer,
  Pull,
  Update,
  Create,
  DeleteLocal,
  DeleteRemote,
  BaselineAction,
  Adopt,
  Forget,
  ReportAction,
  Refuse,
  KeepLocal,
  NoteConflict,
  Cell,
  Plan,
  PlanInput,
  PullReason,
  RemoteEntry,
  RenameLocal,
  RenameRemote,
  Row,
  NoteMove,
} from './decide/plan.js';
export { judgeAbsence, MAX_ABSENCE_GETS, type AbsenceEvidence, type AbsenceVerdict } from './decide/absence.js';
export { detectRenames, baselineIdsAfter, type Renames, type RenameInput, type LocalRename, type RemoteRename, type RemoteSide, type RenameOntoNewFile } from './decide/renames.js';
export { CARRY_BUDGET_BYTES } from './model/limits.js';
export { scanStore, type CachedHash, type CarriedContent, type LocalFile, type LocalSnapshot, type ScanCache, type ScanCarry, type ScanReuse, type FolderRecord } from './local/scan.js';
export type { MarkerState } from './local/marker.js';
export { assessFolder, type FolderVerdict } from './decide/folder-trust.js';
export { StoreFolder, FolderRefusal, MAX_HELD_FOLDERS, REMOVE_WINDOW, type RefusalCode, type LocalRead, type FolderFile, type FolderVisit, type WalkReuse } from './local/store-folder.js';
export type { MountChain, FolderIdentity, ChainProblem } from './local/mount-chain.js';
export { FolderWatch } from './local/folder-watch.js';
export type { TransferSlots, StoreSlots } from './remote/fair-slots.js';
export { indexRemote, alignLocalCase, type RemoteIndex } from './decide/remote-index.js';
export { applyPlan, type ApplyIO } from './pass/apply.js';
export type { Outcome, Result } from './decide/outcome.js';
export { decidePass, type PassDecision, type PassDecisionInput } from './decide/pass-decision.js';
export { resolveConflict, isConflictResolution, flushedConflict, type ConflictPolicy, type ConflictSides } from './decide/conflict-rule.js';
export { takeUpAgreed, clearedByRedownload, type AgreedTakeUp } from './decide/redownload-rule.js';
export { settle, emptyPassReport, type Settled, type SettledState, type SettleFrom, type PassReport, type Notice } from './decide/settle.js';
export type { Reason, ReasonCode, StoreReasonCode, PathReasonCode } from './model/reasons.js';
export type { StoreEvents } from './model/events.js';
export type { RemoteChange, ListedMemory } from './decide/feed-fold.js';
export { emptySyncState, type SyncState } from './model/sync-state.js';
