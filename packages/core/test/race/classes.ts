import { linkSync, lstatSync, mkdirSync, renameSync, symlinkSync, writeFileSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import type { MemoryMounter } from '@memory-mounter/core';
import { Arena, STORE, walk, type CanaryTemplate, type Violation } from './arena.js';
import { agentRemove, Budget, namesIn, raced, stopAll } from './attempts.js';
import { exchangeOnce, lstatOrNull, putBack, Racer, type RacerCounts } from './racer.js';

/**
 * The race classes. Each builds its own arena(s), attacks the engine `budget.target` times and
 * returns what it counted. Shapes of the attacks (the agent's moves) are described at each one;
 * docs/reliability.md ("Racing the engine") has the overview.
 */

export interface ClassResult {
  attempts: number;
  violations: Violation[];
  swaps: number;
  detail: string;
}

const MARKER = '.anthropic-memory-store';
const isLink = (s: Stats) => s.isSymbolicLink();
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/** What one variant of a class did. */
export interface VariantRun {
  arena: Arena;
  budget: Budget;
  counts: RacerCounts;
}

interface VariantResult extends VariantRun {
  name: string;
}

/** Runs a class's variants one after the other, each in its own arena, and adds them up. */
export async function runVariants(
  attempts: number,
  ms: number,
  variants: Record<string, (budget: Budget) => Promise<VariantRun>>,
): Promise<ClassResult> {
  const entries = Object.entries(variants);
  const start = Date.now();
  const results: VariantResult[] = [];
  try {
    for (const [i, [name, variant]] of entries.entries()) {
      const done = results.reduce((n, r) => n + r.budget.attempts, 0);
      results.push({ name, ...(await variant(Budget.share(attempts, start, ms, done, i, entries.length))) });
    }
  } finally {
    await Promise.all(results.map((r) => r.arena.dispose()));
  }
  const sum = (f: (r: VariantResult) => number) => results.reduce((n, r) => n + f(r), 0);
  return {
    attempts: sum((r) => r.budget.attempts),
    violations: results.flatMap((r) => r.arena.violations),
    swaps: sum((r) => r.counts.swaps),
    detail:
      results.map((r) => `${r.name}: ${r.budget.attempts} attempts, ${r.arena.violations.length} violations in ${hit(r.arena.violations)}`).join('; ') +
      '; ' +
      `${sum((r) => r.counts.failures)} exchanges refused, ${sum((r) => r.counts.events)} inotify events, ` +
      `${sum((r) => r.budget.threw)} engine calls threw`,
  };
}

/** How many attempts saw at least one violation. */
export function hit(violations: readonly Violation[]): number {
  return new Set(violations.map((v) => v.attempt)).size;
}

/**
 * Another writer removes every memory outside `seeded`, and the agent removes every local entry
 * that is neither a seeded file, a folder above one, the marker, nor one of `keep`: each attempt
 * starts from the same store and folder, however the last one went. Racers must be paused.
 */
function tidy(arena: Arena, seeded: Record<string, string>, keep: readonly string[] = []): void {
  for (const memory of arena.client.memories(STORE)) if (!(memory.path in seeded)) arena.client.deleteMemory(STORE, memory.path);
  const wanted = new Set([`/${MARKER}`, ...keep, ...Object.keys(seeded)]);
  for (const path of Object.keys(seeded)) for (let p = path; p.lastIndexOf('/') > 0; ) wanted.add((p = p.slice(0, p.lastIndexOf('/'))));
  for (const full of walk(arena.storeDir)) {
    if (!wanted.has(full.slice(arena.storeDir.length))) agentRemove(arena.storeDir, full);
  }
}

/**
 * After an attempt, racers paused: count what happened (Arena.check), let the agent and another
 * writer put the folder and store back (`tidy`), and if anything was found, run one unraced
 * forced reconcile so the engine's own state is clean again before the next attempt. That pass
 * is checked too: a violation there is as real as any.
 */
async function settle(arena: Arena, mounter: MemoryMounter, tidyUp: () => void, allowedInRoot?: readonly string[]): Promise<void> {
  const found = arena.check(allowedInRoot);
  tidyUp();
  if (!found) return;
  await mounter.reconcile({ force: true });
  arena.check(allowedInRoot);
}

function addCounts(total: RacerCounts, more: RacerCounts): void {
  total.swaps += more.swaps;
  total.failures += more.failures;
  total.events += more.events;
}

async function finalizeQuietly(mounter: MemoryMounter): Promise<void> {
  await mounter.finalize().catch(() => undefined);
}

// --- write-outside ---------------------------------------------------------------------------

const WRITE_CANARY: CanaryTemplate = { 'secret.txt': 'host secret\n', 'notes/secret.md': 'host notes\n' };

/**
 * write-outside. Nothing outside the store folder is created, modified or removed while pulls
 * are in flight and the agent swaps a folder on their way for a symlink to the host.
 *
 * 1. subfolder: another writer, before each forced reconcile, changes /sub's memories and adds
 *    new ones, flat and in new folders; the agent exchanges /sub with sub-link -> host (a) in a
 *    loop, (b) the instant the engine creates a new folder in /sub (inotify IN_CREATE `d*`), so
 *    the rest of the pulls meet the link.
 * 2. the store folder itself: memoryRoot/store exchanged with memoryRoot/store-link -> host, with
 *    new and changed memories at the top, (a) in a loop, (b) the instant the engine opens the
 *    folder to list it (IN_OPEN). A fresh mounter every 4 attempts, since a folder seen swapped
 *    is (rightly) distrusted for good.
 * 3. re-download: the agent deletes everything but the marker and plants deep-link -> host; the
 *    forced reconcile re-downloads, and the racer exchanges /deep with deep-link the instant the
 *    engine's mkdir creates it (IN_CREATE), so the rest of /deep/... goes through the link.
 * 4. remote renames (see moveThroughSubfolder).
 */
export function writeOutside(bin: string, attempts: number, ms: number): Promise<ClassResult> {
  return runVariants(attempts, ms, {
    'subfolder, loop': (b) => writeUnderSubfolder(bin, b, 'loop'),
    'subfolder, on mkdir': (b) => writeUnderSubfolder(bin, b, 'on mkdir'),
    'store folder, loop': (b) => writeUnderStoreFolder(bin, b, 'loop'),
    'store folder, on opendir': (b) => writeUnderStoreFolder(bin, b, 'on opendir'),
    're-download': (b) => writeOnRedownload(bin, b),
    'remote renames, loop': (b) => moveThroughSubfolder(bin, b),
  });
}

/**
 * 4. remote renames: another writer moves every memory of /sub to /mv and back, one direction
 *    per attempt, so the engine follows with moves on disk (`StoreFolder.move`) out of /sub or
 *    into it, while the agent exchanges /sub with sub-link -> host in a loop. The memories are
 *    named like the canary files (secret.txt, notes/secret.md): a move made through the link
 *    would carry a host file into the folder, or a memory's file out to the host.
 */
async function moveThroughSubfolder(bin: string, budget: Budget): Promise<VariantRun> {
  const arena = await Arena.create(WRITE_CANARY);
  const names = ['/secret.txt', '/notes/secret.md', ...range(4).map((k) => `/n${k}.md`)];
  const at = (folder: string) => Object.fromEntries(names.map((n) => [`/${folder}${n}`, `moved ${n}\n`]));
  arena.client.seed(STORE, at('sub'));
  // Either place is where the memories belong between attempts.
  const seeded = { ...at('sub'), ...at('mv') };
  const mounter = await arena.mount();
  const sub = join(arena.storeDir, 'sub');
  const link = join(arena.storeDir, 'sub-link');
  symlinkSync(arena.host, link);
  const racer = await Racer.start(bin, ['loop', sub, link]);
  let moved = 0;
  while (budget.more()) {
    const [from, to] = arena.attempt % 2 === 0 ? ['/sub/', '/mv/'] : ['/mv/', '/sub/'];
    const held = new Set(arena.client.memories(STORE).map((m) => m.path));
    for (const path of [...held]) {
      const target = to + path.slice(from.length);
      if (path.startsWith(from) && !held.has(target)) arena.client.renameMemory(STORE, path, target);
    }
    const report = await raced(arena, budget, [racer], () => mounter.reconcile({ force: true }));
    moved += report?.stores[0]?.renamed.length ?? 0;
    putBack(bin, sub, link, isLink);
    await settle(arena, mounter, () => tidy(arena, seeded, ['/sub-link']));
  }
  const counts = await stopAll([racer]);
  await finalizeQuietly(mounter);
  // So a run that never got a move past the racer is seen for what it is.
  console.log(`remote renames: ${moved} files moved by the engine in ${budget.attempts} attempts`);
  return { arena, budget, counts };
}

async function writeUnderSubfolder(bin: string, budget: Budget, mode: 'loop' | 'on mkdir'): Promise<VariantRun> {
  const arena = await Arena.create(WRITE_CANARY);
  const seeded = { '/top.md': 'top\n', ...Object.fromEntries(range(6).map((k) => [`/sub/n${k}.md`, `n${k}\n`])) };
  arena.client.seed(STORE, seeded);
  const mounter = await arena.mount();
  const sub = join(arena.storeDir, 'sub');
  const link = join(arena.storeDir, 'sub-link');
  symlinkSync(arena.host, link);
  const racer = await Racer.start(bin, mode === 'loop' ? ['loop', sub, link] : ['on', 'create', sub, 'd*', sub, link]);
  while (budget.more()) {
    const i = arena.attempt + 1;
    for (const k of range(6)) arena.client.writeMemory(STORE, `/sub/n${k}.md`, `n${k} v${i}\n`);
    for (const k of range(4)) arena.client.writeMemory(STORE, `/sub/w${i}-${k}.md`, `new ${i} ${k}\n`);
    for (const k of range(4)) arena.client.writeMemory(STORE, `/sub/d${i}/x/w${k}.md`, `new deep ${i} ${k}\n`);
    await raced(arena, budget, [racer], () => mounter.reconcile({ force: true }));
    putBack(bin, sub, link, isLink);
    await settle(arena, mounter, () => tidy(arena, seeded, ['/sub-link']));
  }
  const counts = await stopAll([racer]);
  await finalizeQuietly(mounter);
  return { arena, budget, counts };
}

async function writeUnderStoreFolder(bin: string, budget: Budget, mode: 'loop' | 'on opendir'): Promise<VariantRun> {
  const arena = await Arena.create(WRITE_CANARY);
  const seeded = { ...Object.fromEntries(range(6).map((k) => [`/r${k}.md`, `r${k}\n`])) };
  arena.client.seed(STORE, seeded);
  const link = join(arena.memoryRoot, 'store-link');
  symlinkSync(arena.host, link);
  const inRoot = ['store', 'store-link'];
  const counts: RacerCounts = { swaps: 0, failures: 0, events: 0 };
  while (budget.more()) {
    const mounter = await arena.mount();
    // A watch holds the folder's inode, and each mounter makes a new folder: a racer per mounter.
    const args = mode === 'loop' ? ['loop', arena.storeDir, link] : ['on', 'open', arena.storeDir, '.', arena.storeDir, link];
    const racer = await Racer.start(bin, args);
    for (let j = 0; j < 4 && budget.more(); j++) {
      const i = arena.attempt + 1;
      for (const k of range(6)) arena.client.writeMemory(STORE, `/r${k}.md`, `r${k} v${i}\n`);
      for (const k of range(4)) arena.client.writeMemory(STORE, `/w${i}-${k}.md`, `new ${i} ${k}\n`);
      for (const k of range(4)) arena.client.writeMemory(STORE, `/d${i}/w${k}.md`, `new deep ${i} ${k}\n`);
      await raced(arena, budget, [racer], () => mounter.reconcile({ force: true }));
      putBack(bin, arena.storeDir, link, isLink);
      await settle(arena, mounter, () => tidy(arena, seeded), inRoot);
    }
    addCounts(counts, await stopAll([racer]));
    await finalizeQuietly(mounter);
    arena.removeStoreDir();
    arena.check(['store-link']);
  }
  return { arena, budget, counts };
}

async function writeOnRedownload(bin: string, budget: Budget): Promise<VariantRun> {
  const arena = await Arena.create(WRITE_CANARY);
  const seeded = {
    '/top.md': 'top\n',
    // Many memories, deep: the download is still under way when the racer's swap lands.
    ...Object.fromEntries(range(24).map((k) => [`/deep/a${k % 3}/b/c/d/e/m${k}.md`, `m${k}\n`])),
  };
  arena.client.seed(STORE, seeded);
  // No remote delete may follow from the agent's wipe, whatever the engine makes of it.
  const mounter = await arena.mount({ deleteGracePeriod: 3600 });
  const deep = join(arena.storeDir, 'deep');
  const link = join(arena.storeDir, 'deep-link');
  const racer = await Racer.start(bin, ['on', 'create', arena.storeDir, 'deep', deep, link]);
  while (budget.more()) {
    for (const name of namesIn(arena.storeDir)) if (name !== MARKER) agentRemove(arena.storeDir, join(arena.storeDir, name));
    symlinkSync(arena.host, link);
    await raced(arena, budget, [racer], () => mounter.reconcile({ force: true }));
    putBack(bin, deep, link, isLink);
    await settle(arena, mounter, () => tidy(arena, seeded, ['/deep-link']));
  }
  const counts = await stopAll([racer]);
  await finalizeQuietly(mounter);
  return { arena, budget, counts };
}

// --- read-outside ----------------------------------------------------------------------------

/** Host files named like the memories under /sub: a scan that follows the swapped link finds them. */
const READ_CANARY: CanaryTemplate = {
  ...Object.fromEntries(range(6).map((k) => [`n${k}.md`, 'host file named like a memory\n'])),
  'secret.txt': 'host secret\n',
  'x/n0.md': 'host file in a host folder\n',
};

/**
 * read-outside. No host byte is read and sent to the store while forced reconciles scan /sub and
 * the agent exchanges /sub with sub-link -> host, whose files have /sub's names: (a) in a loop;
 * (b) on every inotify event of the real /sub (opened, listed, a file in it created, opened or
 * read), so the swaps follow the engine's own steps; (c) the instant the engine opens /sub to
 * list it (IN_OPEN of the folder itself): it lists the real folder, then reads its files by name.
 */
export function readOutside(bin: string, attempts: number, ms: number): Promise<ClassResult> {
  return runVariants(attempts, ms, {
    loop: (b) => readUnderSubfolder(bin, b, 'loop'),
    'every inotify event': (b) => readUnderSubfolder(bin, b, 'inotify'),
    'on opendir': (b) => readUnderSubfolder(bin, b, 'on opendir'),
  });
}

async function readUnderSubfolder(bin: string, budget: Budget, mode: 'loop' | 'inotify' | 'on opendir'): Promise<VariantRun> {
  const arena = await Arena.create(READ_CANARY);
  const seeded = { '/top.md': 'top\n', ...Object.fromEntries(range(6).map((k) => [`/sub/n${k}.md`, `n${k}\n`])) };
  arena.client.seed(STORE, seeded);
  const mounter = await arena.mount();
  const sub = join(arena.storeDir, 'sub');
  const link = join(arena.storeDir, 'sub-link');
  symlinkSync(arena.host, link);
  const args = {
    loop: ['loop', sub, link],
    inotify: ['inotify', sub, sub, link],
    'on opendir': ['on', 'open', sub, '.', sub, link],
  }[mode];
  const racer = await Racer.start(bin, args);
  while (budget.more()) {
    await raced(arena, budget, [racer], () => mounter.reconcile({ force: true }));
    putBack(bin, sub, link, isLink);
    await settle(arena, mounter, () => tidy(arena, seeded, ['/sub-link']));
  }
  const counts = await stopAll([racer]);
  await finalizeQuietly(mounter);
  return { arena, budget, counts };
}

// --- watch ---------------------------------------------------------------------------------

/**
 * watch. The folder watch (issue 24) is a hint of which folders to list; nothing of the
 * confinement may rest on it. Ordinary forced reconciles, most of which take the watch's word
 * (the first of a mounter scans in full), while the agent:
 * (a) edits a file in the watched /sub, then swaps /sub with sub-link -> host (whose files
 *     have /sub's names) while the engine is idle, so that the pass starts from what the watch
 *     said; after it the real folder is put back;
 * (b) floods the watch: exchanges /flood/a.md and /flood/b.md as fast as it can (a rename
 *     event each) and /sub with sub-link in a loop, during every pass, editing /top.md
 *     between passes.
 * No host byte may be read and sent; the last edits reach the store by finalize's full scan.
 */
export function watchRaces(bin: string, attempts: number, ms: number): Promise<ClassResult> {
  return runVariants(attempts, ms, {
    'swapped between passes': (b) => watchSwappedBetweenPasses(bin, b),
    flood: (b) => watchFlooded(bin, b),
  });
}

async function watchSwappedBetweenPasses(bin: string, budget: Budget): Promise<VariantRun> {
  const arena = await Arena.create(READ_CANARY);
  const seeded = { '/top.md': 'top\n', ...Object.fromEntries(range(6).map((k) => [`/sub/n${k}.md`, `n${k}\n`])) };
  arena.client.seed(STORE, seeded);
  const mounter = await arena.mount();
  const sub = join(arena.storeDir, 'sub');
  const link = join(arena.storeDir, 'sub-link');
  symlinkSync(arena.host, link);
  // The first pass scans in full and starts the watches; the passes after it take their word.
  await mounter.reconcile({ force: true });
  const counts: RacerCounts = { swaps: 0, failures: 0, events: 0 };
  let edit = 0;
  while (budget.more()) {
    // The agent edits the real folder, then swaps the two names.
    writeFileSync(join(sub, `n${edit % 6}.md`), `edit ${edit}\n`);
    edit++;
    exchangeOnce(bin, sub, link);
    counts.swaps++;
    await raced(arena, budget, [], () => mounter.reconcile({ force: true }));
    // The real folder back at /sub, by two more renames the next pass's hint is told of.
    putBack(bin, sub, link, isLink);
    await settle(arena, mounter, () => tidy(arena, seeded, ['/sub-link']));
  }
  await finalizeQuietly(mounter);
  return { arena, budget, counts };
}

async function watchFlooded(bin: string, budget: Budget): Promise<VariantRun> {
  const arena = await Arena.create(READ_CANARY);
  const seeded = {
    '/top.md': 'top\n',
    '/flood/a.md': 'a\n',
    '/flood/b.md': 'b\n',
    ...Object.fromEntries(range(6).map((k) => [`/sub/n${k}.md`, `n${k}\n`])),
  };
  arena.client.seed(STORE, seeded);
  const mounter = await arena.mount();
  const sub = join(arena.storeDir, 'sub');
  const link = join(arena.storeDir, 'sub-link');
  symlinkSync(arena.host, link);
  await mounter.reconcile({ force: true });
  const flood = await Racer.start(bin, ['loop', join(arena.storeDir, 'flood', 'a.md'), join(arena.storeDir, 'flood', 'b.md')]);
  const swap = await Racer.start(bin, ['loop', sub, link]);
  let last = '';
  while (budget.more()) {
    last = `top ${budget.attempts}\n`;
    writeFileSync(join(arena.storeDir, 'top.md'), last);
    await raced(arena, budget, [flood, swap], () => mounter.reconcile({ force: true }));
    putBack(bin, sub, link, isLink);
    await settle(arena, mounter, () => tidy(arena, { ...seeded, '/top.md': last }, ['/sub-link']));
  }
  const counts = await stopAll([flood, swap]);
  putBack(bin, sub, link, isLink);
  await mounter.finalize().catch(() => undefined);
  // What the flood may have kept the watch from saying, the final sync's full scan saw.
  if (arena.client.snapshot(STORE)['/top.md'] !== last) arena.note('last edit not pushed by finalize', '/top.md');
  return { arena, budget, counts };
}

// --- delete-outside --------------------------------------------------------------------------

/** Host files named like the memories the engine removes: a removal that follows the link finds them. */
const DELETE_CANARY: CanaryTemplate = {
  ...Object.fromEntries(range(6).map((k) => [`n${k}.md`, 'host file named like a memory\n'])),
  ...Object.fromEntries(range(8).map((k) => [`d${k}.md`, 'host file named like a deleted memory\n'])),
  'deep/x/y.md': 'host file in host folders\n',
  'secret.txt': 'host secret\n',
};

/**
 * delete-outside. Nothing outside the store folder is removed when the engine removes things
 * while the agent exchanges folders with links to the host in a loop:
 * 1. finalize() of a fresh mounter: the final sync, then the recursive removal of the folder,
 *    while folders are exchanged with links to the host that the agent keeps deep in a folder of
 *    its own (so the removal reaches them last): (a) /sub0../sub3 in a loop, (b) /sub0 the
 *    instant its first entry is deleted (IN_DELETE): the removal has listed the real folder and
 *    goes on by name;
 * 2. an ordinary forced reconcile that deletes local files because another writer deleted their
 *    memories, while /sub is exchanged with sub-link -> host (a) in a loop, (b) the instant the
 *    engine deletes the first of them. The host holds files of the same names throughout.
 */
export function deleteOutside(bin: string, attempts: number, ms: number): Promise<ClassResult> {
  return runVariants(attempts, ms, {
    'finalize, loop': (b) => deleteOnFinalize(bin, b, 'loop'),
    'finalize, on delete': (b) => deleteOnFinalize(bin, b, 'on delete'),
    'remote deletions, loop': (b) => deleteOnRemoteDeletions(bin, b, 'loop'),
    'remote deletions, on delete': (b) => deleteOnRemoteDeletions(bin, b, 'on delete'),
  });
}

async function deleteOnFinalize(bin: string, budget: Budget, mode: 'loop' | 'on delete'): Promise<VariantRun> {
  const arena = await Arena.create(DELETE_CANARY);
  // Each folder holds the host's names and is swapped: four chances per removal for the loop;
  // one folder (one racer to start per attempt) is enough for the precise trigger.
  const folders = range(mode === 'loop' ? 4 : 1).map((j) => `sub${j}`);
  const seeded: Record<string, string> = { '/top.md': 'top\n' };
  for (const f of folders) {
    for (const k of range(6)) seeded[`/${f}/n${k}.md`] = `${f} n${k}\n`;
    seeded[`/${f}/deep/x/y.md`] = `${f} y\n`;
  }
  arena.client.seed(STORE, seeded);
  // The agent keeps its links deep in a folder of its own: the removal, which works on every
  // folder at once, reaches them only after it has started emptying /sub<j>.
  const hideout = join(arena.storeDir, 'zz', 'a', 'b', 'c', 'd');
  const pairs = folders.map((f) => [join(arena.storeDir, f), join(hideout, `${f}-link`)] as const);
  const counts: RacerCounts = { swaps: 0, failures: 0, events: 0 };
  const loop = mode === 'loop' ? await Racer.start(bin, ['loop', ...pairs.flat()]) : null;
  while (budget.more()) {
    const mounter = await arena.mount();
    mkdirSync(hideout, { recursive: true });
    for (const [, link] of pairs) symlinkSync(arena.host, link);
    // A watch holds the inode of a folder, new with each mounter: watching racers per attempt.
    const racers = loop
      ? [loop]
      : await Promise.all(pairs.map(([sub, link]) => Racer.start(bin, ['on', 'delete', sub, '*', sub, link])));
    await raced(arena, budget, racers, () => mounter.finalize());
    if (!loop) addCounts(counts, await stopAll(racers));
    for (const [sub, link] of pairs) putBack(bin, sub, link, isLink);
    arena.check();
    arena.removeStoreDir();
    tidy(arena, seeded);
  }
  if (loop) addCounts(counts, await stopAll([loop]));
  return { arena, budget, counts };
}

async function deleteOnRemoteDeletions(bin: string, budget: Budget, mode: 'loop' | 'on delete'): Promise<VariantRun> {
  const arena = await Arena.create(DELETE_CANARY);
  const seeded = { '/top.md': 'top\n', ...Object.fromEntries(range(6).map((k) => [`/sub/n${k}.md`, `n${k}\n`])) };
  arena.client.seed(STORE, seeded);
  const mounter = await arena.mount();
  const sub = join(arena.storeDir, 'sub');
  const link = join(arena.storeDir, 'sub-link');
  symlinkSync(arena.host, link);
  const racer = await Racer.start(bin, mode === 'loop' ? ['loop', sub, link] : ['on', 'delete', sub, '*', sub, link]);
  while (budget.more()) {
    const i = arena.attempt + 1;
    // Unraced: the memories arrive on disk. Then another writer deletes them in the store.
    for (const k of range(8)) arena.client.writeMemory(STORE, `/sub/d${k}.md`, `d${k} v${i}\n`);
    await mounter.reconcile({ force: true });
    for (const k of range(8)) arena.client.deleteMemory(STORE, `/sub/d${k}.md`);
    await raced(arena, budget, [racer], () => mounter.reconcile({ force: true }));
    putBack(bin, sub, link, isLink);
    await settle(arena, mounter, () => tidy(arena, seeded, ['/sub-link']));
  }
  const counts = await stopAll([racer]);
  await finalizeQuietly(mounter);
  return { arena, budget, counts };
}

// --- hard-links ------------------------------------------------------------------------------

/**
 * hard-links. A hard link in the mount to a host file is never uploaded: its bytes are the
 * host's. The agent keeps swap.md a hard link to host/secret.txt and edits its own own.md
 * before each forced reconcile, while a loop exchanges the two names (a check of the link count
 * before the open is raced); it also adds a fresh hard link to host/notes.md at links/h<i>.md
 * each attempt, removing the last one.
 */
export async function hardLinks(bin: string, attempts: number, ms: number): Promise<ClassResult> {
  return runVariants(attempts, ms, { 'hard links': (b) => uploadHardLinks(bin, b) });
}

async function uploadHardLinks(bin: string, budget: Budget): Promise<VariantRun> {
  const arena = await Arena.create({ 'secret.txt': 'host secret\n', 'notes.md': 'host notes\n' });
  const seeded = { '/top.md': 'top\n', '/own.md': 'own\n' };
  arena.client.seed(STORE, seeded);
  const mounter = await arena.mount({ deleteGracePeriod: 0 });
  const own = join(arena.storeDir, 'own.md');
  const swap = join(arena.storeDir, 'swap.md');
  const links = join(arena.storeDir, 'links');
  const secret = join(arena.host, 'secret.txt');
  const secretIno = lstatSync(secret).ino;
  linkSync(secret, swap);
  const racer = await Racer.start(bin, ['loop', own, swap]);
  while (budget.more()) {
    const i = arena.attempt + 1;
    if (lstatOrNull(swap)?.ino !== secretIno) {
      agentRemove(arena.storeDir, swap);
      linkSync(secret, swap);
    }
    // A new file renamed into place: never a write into whatever inode holds the name.
    writeFileSync(join(arena.storeDir, '.own.agent-tmp'), `own v${i}\n`);
    renameSync(join(arena.storeDir, '.own.agent-tmp'), own);
    agentRemove(arena.storeDir, join(links, `h${i - 1}.md`));
    if (!lstatOrNull(links)) mkdirSync(links);
    if (lstatOrNull(links)?.isDirectory()) linkSync(join(arena.host, 'notes.md'), join(links, `h${i}.md`));
    await raced(arena, budget, [racer], () => mounter.reconcile({ force: true }));
    putBack(bin, own, swap, (s) => s.ino === secretIno);
    await settle(arena, mounter, () => {});
  }
  const counts = await stopAll([racer]);
  await finalizeQuietly(mounter);
  return { arena, budget, counts };
}
