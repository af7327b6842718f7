/**
 * `@memory-mounter/core/engine`: the engine's parts, for a host that runs its own loop instead
 * of `MemoryMounter`'s. One pass of a store is:
 *
 *   1. open the store folder (`StoreFolder.open`): every disk access of the pass goes through
 *      it, confined to the folder (never through a link the agent planted);
 *   2. scan it (`scanStore`), and judge it (`assessFolder`: a wiped or emptied folder is
 *      distrusted, never taken as "delete everything");
 *   3. read the store (`StoreClient.list`), index it (`indexRemote`: paths a mount cannot hold
 *      are skipped) and fold in writes whose outcome was unknown (`settleUnknownWrites`);
 *   4. plan (`planStore`, pure: SPEC 4.2's table, one `classify` row per path, deletions capped
 *      by `deleteCap`);
 *   5. apply the plan (`applyPlan`) through the two seams.
 *
 * `SyncState` is what a pass carries to the next (`emptySyncState()` before the first).
 * Everything here is as stable as the engine's shape: the executor's signature is about to
 * change (apply returning outcomes, a pure settle step; see issue 10), and this entry will
 * export the new parts when they land. The library a host normally uses is the package's main
 * entry, `@memory-mounter/core`.
 */
export { planStore, classify, deleteCap, settleUnknownWrites } from './plan.js';
export type { Action, Plan, PlanInput, PullReason, PushReason, RemoteEntry, Row } from './plan.js';
export { scanStore, type LocalFile, type LocalSnapshot, type ScanCache } from './scan.js';
export type { MarkerState } from './marker.js';
export { assessFolder, type FolderVerdict } from './folder-trust.js';
export { StoreFolder, FolderRefusal, type RefusalCode, type LocalRead, type FolderFile, type FolderVisit } from './store-folder.js';
export { indexRemote, alignLocalCase, type RemoteIndex } from './remote-index.js';
export { applyPlan, type ApplyContext } from './apply.js';
export type { StoreEvents } from './events.js';
export type { RemoteChange, ListedMemory } from './remote-feed.js';
export { emptySyncState, type SyncState } from './sync-state.js';
