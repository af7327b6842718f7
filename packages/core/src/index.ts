// `@memory-mounter/core`: the library a host uses (MemoryMounter, its seams, errors, reports).
// The engine's parts, for a host that builds its own loop, are `@memory-mounter/core/engine`.
export { MemoryMounter } from './session/mounter.js';
export { mountPathSlug } from './model/mount-path.js';
export { resolveKernelPath, SymlinkLoopError, MAX_SYMLINKS, type ReadLink } from './local/kernel-path.js';
export { asLogger, debugLogger, fieldsFirstLogger, type FieldsFirstLogger } from './session/logger.js';
export { escapeForTerminal, jsonForTerminal } from './model/terminal-text.js';
export { MounterEventEmitter } from './session/event-emitter.js';
export { conflictCopyPath } from './model/unsynced-names.js';
export type { MounterEvents, MounterEventName, PathEvent, TransferEvent, RenamedEvent, ConflictEvent, ProgressEvent, PulledReason } from './model/events.js';
export type { StoreStatus, UnknownWrite } from './session/status.js';
export type { DeletionMode, Access, MemoryStoreResource, MemoryMounterOptions, Logger, MountedStore } from './model/types.js';
export type { EntryType, FileStat, DirEntry, DirHandle, DirWatch, OpenFile, FileSystem, WriteOptions } from './local/file-system.js';
export { errorCode, fsError, unpinnedDirHandle } from './local/file-system.js';
export { NodeFileSystem, type OpenFlagConstants } from './local/node-file-system.js';
export type {
  StoreMemory,
  StoreClient,
  StoreMemoryVersion,
  StoreMemoryVersionOperation,
  StoreListVersionsOptions,
  StoreListFolderOptions,
  StoreListingOptions,
  StoreFolderEntry,
} from './remote/store-client.js';
export {
  MemoryConfigError,
  MemoryMountError,
  MemoryWriteRefusedError,
  MemoryLifecycleError,
  StoreError,
  asStoreError,
} from './model/errors.js';
export type { MountErrorCode, StoreErrorKind } from './model/errors.js';
export type {
  StoreSyncReport,
  SyncReport,
  FinalizeReport,
  RecoveryReport,
  RecoveredStoreReport,
  RecoveryLeftCode,
  PathReport,
  UnpushedReport,
  StoreRead,
  StoreRequests,
} from './model/reports.js';
export type { FullListingReason, FeedDoubtCode } from './decide/feed-fold.js';
export type { ReasonCode, StoreReasonCode, PathReasonCode, Reason } from './model/reasons.js';
export type { RecoverOptions } from './recovery/recover.js';
export {
  recordFileName,
  parseRecord,
  STATE_RECORD_FORMAT,
  STATE_RECORD_VERSION,
  type StateRecord,
  type RecordPhase,
  type ParsedRecord,
  type RecordedFolderId,
} from './recovery/record-file.js';
export * from './model/limits.js';
export { memoryPathProblem, mountablePathProblem } from './model/memory-path.js';
export { tempFileName, isTempFileName, isConflictCopyName, isUnsyncedName } from './model/unsynced-names.js';
export { sha256Hex } from './model/sha256.js';
