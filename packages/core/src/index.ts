// `@memory-mounter/core`: the library a host uses (MemoryMounter, its seams, errors, reports).
// The engine's parts, for a host that builds its own loop, are `@memory-mounter/core/engine`.
export { MemoryMounter } from './mounter.js';
export { mountPathSlug } from './mount-path.js';
export { resolveKernelPath, SymlinkLoopError, MAX_SYMLINKS, type ReadLink } from './kernel-path.js';
export { asLogger, debugLogger, fieldsFirstLogger, type FieldsFirstLogger } from './logger.js';
export { escapeForTerminal, jsonForTerminal } from './terminal-text.js';
export { MounterEventEmitter, conflictCopyPath } from './events.js';
export type { MounterEvents, MounterEventName, PathEvent, TransferEvent, RenamedEvent, ConflictEvent, ProgressEvent, PulledReason } from './events.js';
export type { StoreStatus, UnknownWrite } from './status.js';
export type { DeletionMode, Access, MemoryStoreResource, MemoryMounterOptions, Logger, MountedStore } from './types.js';
export type { EntryType, FileStat, DirEntry, DirHandle, DirWatch, OpenFile, FileSystem, WriteOptions } from './file-system.js';
export { errorCode, fsError, unpinnedDirHandle } from './file-system.js';
export { NodeFileSystem, type OpenFlagConstants } from './node-file-system.js';
export type {
  StoreMemory,
  StoreClient,
  StoreMemoryVersion,
  StoreMemoryVersionOperation,
  StoreListVersionsOptions,
  StoreListFolderOptions,
  StoreListingOptions,
  StoreFolderEntry,
} from './store-client.js';
export {
  MemoryConfigError,
  MemoryMountError,
  MemoryWriteRefusedError,
  MemoryLifecycleError,
  StoreError,
  asStoreError,
} from './errors.js';
export type { MountErrorCode, StoreErrorKind } from './errors.js';
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
} from './reports.js';
export type { FullListingReason, FeedDoubtCode } from './remote-feed.js';
export type { ReasonCode, StoreReasonCode, PathReasonCode, Reason } from './reasons.js';
export type { RecoverOptions } from './recover.js';
export {
  recordFileName,
  parseRecord,
  STATE_RECORD_FORMAT,
  STATE_RECORD_VERSION,
  type StateRecord,
  type RecordPhase,
  type ParsedRecord,
  type RecordedFolderId,
} from './state-record.js';
export * from './limits.js';
export { memoryPathProblem, mountablePathProblem } from './memory-path.js';
export { tempFileName, isTempFileName, isConflictCopyName, isUnsyncedName } from './temp-files.js';
export { sha256Hex } from './sha256.js';
