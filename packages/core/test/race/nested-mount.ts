import { mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryMounter, type MemoryMounterOptions } from '@memory-mounter/core';
import { Arena, silentLogger, STORE, type CanaryTemplate } from './arena.js';
import { raced, stopAll, type Budget } from './attempts.js';
import { runVariants, type ClassResult } from './classes.js';
import { lstatOrNull, putBack, Racer } from './racer.js';

/**
 * nested-mount (issue 20 item 1). A store mounted at a nested mount path has folders between
 * memoryRoot and its own folder; the agent exchanges one of them, in a loop, with a link to a
 * host folder while the engine runs a pass, finalize, or recover. Any look at the store's path
 * made by host path again would go through the link, to a host folder that holds:
 *
 *   host/a/notes/        an empty folder (a pass would adopt it and download the store into it)
 *   host/b/notes/        a folder with a host file (a scan would read it, a removal empty it)
 *   host/c/notes         a file named like the store folder (a removal would unlink it)
 *
 * The link's target changes with each attempt (a, b, c). Two layouts:
 *   - `team`: mount path /mnt/memory/team/notes, `memoryRoot/team` made beforehand (the agent
 *     can rename in memoryRoot), exchanged with `memoryRoot/team-x`;
 *   - `made`: mount path /mnt/memory/team/sub/notes, both in-between folders made by the
 *     mounter, `team/sub` exchanged with `team/sub-x` (the agent can write only in the folder
 *     the mounter made).
 * Every attempt is a fresh session (a folder seen swapped is distrusted for good, so one session
 * would stop looking after the first hit); its materialize runs unraced, then another writer and
 * the agent each change a memory, and only the operation under attack is raced. Violations:
 * any change under host/, any canary byte uploaded, anything new in memoryRoot.
 */

const CANARY: CanaryTemplate = {
  'a/notes': null,
  'b/notes/secret.md': 'host notes\n',
  'b/keep.txt': 'host keep\n',
  'c/notes': 'a host file named like the store folder\n',
};
const TARGETS = ['a', 'b', 'c'] as const;

type Operation = 'pass' | 'finalize' | 'recover';

interface Layout {
  mountPath: string;
  /** memoryRoot-relative: the folder exchanged, and the link it is exchanged with. */
  exchanged: string;
  link: string;
  /** memoryRoot-relative folders the operator made before the session. */
  premade: string[];
  /** What may stand in memoryRoot after an attempt. */
  inRoot: string[];
}

const LAYOUTS: Record<'team' | 'made', Layout> = {
  team: { mountPath: '/mnt/memory/team/notes', exchanged: 'team', link: 'team-x', premade: ['team'], inRoot: ['team', 'team-x'] },
  made: { mountPath: '/mnt/memory/team/sub/notes', exchanged: 'team/sub', link: 'team/sub-x', premade: [], inRoot: ['team'] },
};

export function nestedMount(operation: Operation) {
  return (bin: string, attempts: number, ms: number): Promise<ClassResult> =>
    runVariants(attempts, ms, {
      'memoryRoot/team exchanged': (b) => attack(bin, b, operation, LAYOUTS.team),
      'team/sub (made by the mounter) exchanged': (b) => attack(bin, b, operation, LAYOUTS.made),
    });
}

async function attack(bin: string, budget: Budget, operation: Operation, layout: Layout) {
  const arena = await Arena.create(CANARY);
  // The operator's, outside the arena (check() counts anything new beside memoryRoot).
  const stateDir = mkdtempSync(join(tmpdir(), 'mm-nested-state-'));
  const exchanged = join(arena.memoryRoot, layout.exchanged);
  const link = join(arena.memoryRoot, layout.link);
  const seeded = { '/a.md': 'a\n', '/deep/b.md': 'b\n' };
  const racer = await Racer.start(bin, ['loop', exchanged, link]);
  const options: Partial<MemoryMounterOptions> = { stateDir };
  const resource = { type: 'memory_store', memory_store_id: STORE, name: 'notes', mount_path: layout.mountPath, access: 'read_write' as const };
  const storeDir = join(arena.memoryRoot, ...layout.mountPath.split('/').slice(3));
  let k = 0;
  while (budget.more()) {
    k++;
    // A fresh start: memoryRoot as the operator left it, the store as seeded, no records.
    for (const name of ['team', 'team-x']) rmSync(join(arena.memoryRoot, name), { recursive: true, force: true });
    rmSync(stateDir, { recursive: true, force: true });
    mkdirSync(stateDir);
    for (const memory of arena.client.memories(STORE)) arena.client.deleteMemory(STORE, memory.path);
    arena.client.seed(STORE, seeded);
    for (const dir of layout.premade) mkdirSync(join(arena.memoryRoot, dir), { recursive: true });
    const mounter = arena.mounter(options);
    try {
      await mounter.materialize([resource]);
    } catch {
      budget.threw++;
      continue;
    }
    symlinkSync(join(arena.host, TARGETS[k % TARGETS.length]!), link);
    // Something for the operation to do: a pull, a push, a new folder to make.
    arena.client.writeMemory(STORE, '/a.md', `a ${k}\n`);
    arena.client.writeMemory(STORE, `/new${k}/c.md`, `c ${k}\n`);
    writeFileSync(join(storeDir, 'deep', 'b.md'), `b edited ${k}\n`);
    await raced(arena, budget, [racer], async () => {
      if (operation === 'pass') await mounter.reconcile({ force: true });
      else if (operation === 'finalize') await mounter.finalize();
      else await MemoryMounter.recover({ storeClient: arena.storeClient, stateDir, memoryRoot: arena.memoryRoot, logger: silentLogger });
    });
    putBack(bin, exchanged, link, (s) => s.isSymbolicLink());
    arena.check(layout.inRoot);
    // Lets go of the session's handles (its folder is removed, or left and removed below).
    if (operation !== 'finalize') await mounter.finalize().catch(() => undefined);
    if (lstatOrNull(link)?.isSymbolicLink()) unlinkSync(link);
    arena.check(layout.inRoot);
  }
  const counts = await stopAll([racer]);
  rmSync(stateDir, { recursive: true, force: true });
  return { arena, budget, counts };
}
