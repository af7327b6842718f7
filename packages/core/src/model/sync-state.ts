import type { ScanCache } from '../local/scan.js';

/**
 * What the engine remembers about one store between passes. A pass moves it once, at its commit
 * step (pass/store-sync.ts), to what the fold (decide/settle.ts) made of the outcomes, and only
 * for what was really applied, path by path: a failed transfer leaves its path as it was, so
 * the next pass sees the same difference and decides again.
 */
export interface SyncState {
  /** path -> sha both sides held after the last successful transfer (or download). */
  baseline: Map<string, string>;
  /**
   * path -> id of the memory each baseline entry was agreed with, so a memory renamed on either
   * side keeps its id. Refreshed after each pass from what the store is known to hold; entries
   * outside the baseline are dropped.
   */
  baselineIds: Map<string, string>;
  /** path -> clock (ms) when a file went missing while its memory was unchanged. */
  missingSince: Map<string, number>;
  /**
   * path -> serial of the first full listing that missed its memory, while that absence is not
   * corroborated (absence.ts): the file is kept meanwhile. Reset whenever the view is.
   */
  absentFrom: Map<string, number>;
  /** path -> sha of local content the store refused or that can never be pushed. */
  refused: Map<string, string>;
  /** path -> sha sent by a write whose outcome is unknown (`unavailable`). */
  unknownWrites: Map<string, string>;
  /** Keys of warnings already given, so a lasting condition is warned once, not every pass. */
  warned: Set<string>;
  /** Set once the folder fails the trust check; never cleared: a folder not ours is never synced again. */
  distrusted: string | null;
  /** File hashes by stat, so an idle pass reads no file twice. */
  scanCache: ScanCache;
}

/** The part of the state a crash record names (recovery/mount-record.ts). */
export interface RecordedState {
  readonly baseline: ReadonlyMap<string, string>;
  readonly baselineIds: ReadonlyMap<string, string>;
  readonly unknownWrites: ReadonlyMap<string, string>;
}

export function emptySyncState(): SyncState {
  return {
    baseline: new Map(),
    baselineIds: new Map(),
    missingSince: new Map(),
    absentFrom: new Map(),
    refused: new Map(),
    unknownWrites: new Map(),
    warned: new Set(),
    distrusted: null,
    scanCache: new Map(),
  };
}
