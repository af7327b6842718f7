/**
 * Engine bugs the reliability tests found and that are not fixed yet. Each one has an `it.fails`
 * regression test with its minimal steps (model.test.ts), which keeps the oracle strict. The random
 * runs tolerate exactly these, counted, so that they keep looking for new violations; when a fix
 * lands, its regression test starts passing (and so fails as `it.fails`): then delete the entry.
 *
 * Fixed so far (their regression tests are plain `it` now): B1, a push-only flush that did not
 * name the conflicts it could not pull, and B2, twins differing only in case cross-written on a
 * case-insensitive disk (both fixed in 94916eb); B3, a folder emptied one deletion at a time taken
 * for a wipe (the wipe check now leaves pending deletion candidates out), and B4, a re-download
 * pass that left its skipped paths out of the report.
 */
// An entry is `id: one-line description`, with its strict regression test beside it.
export const KNOWN_BUGS: Record<string, string> = {
  B5: 'recover leaves an empty store folder (marker gone with the rest) as marker_mismatch: the next session at that path is refused until an operator removes it (finalize removes such a folder, issue 13 bug 6)',
  B7: "recover pushes nothing from a folder whose baseline files are all gone (the wipe verdict: 'a push-only flush does not re-download'): its new files are named unpushed and the folder is left on every run, so the next session at that path is refused until an operator removes it",
  B6: 'recover leaves a folder whose only unpushed change is content the store refuses (not UTF-8, over 100 KB) on every run: the next session at that path is refused until an operator removes it',
};

export type KnownBug = keyof typeof KNOWN_BUGS;

export const knownBugHits: Record<KnownBug, number> = {};
