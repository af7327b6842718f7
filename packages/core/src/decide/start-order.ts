import type { Transfer } from './plan.js';

/**
 * The order in which the executor starts a plan's transfers: the folders take turns, one
 * transfer each, so the transfers in flight at any moment sit in as many different folders as
 * the plan has. Within a folder the plan's order is kept.
 *
 * Why: creating or renaming a name in a folder holds that folder's lock in the kernel, so
 * writes into one folder run one after another however many are in flight. A download in path
 * order keeps its whole pool on one folder at a time; taking turns lets them run side by side
 * (measured on ext4 with 32 in flight: 2,000 files in 40 folders written in about half the time
 * and half the kernel CPU). The order is only a schedule: every transfer still re-checks the disk
 * right before it acts, and outcomes are returned in the plan's order.
 *
 * Returns the indexes of `transfers`, each once.
 */
export function spreadByFolder(transfers: readonly Pick<Transfer, 'path'>[]): number[] {
  const byFolder = new Map<string, number[]>();
  transfers.forEach((transfer, index) => {
    const folder = parentOf(transfer.path);
    const queue = byFolder.get(folder);
    if (queue) queue.push(index);
    else byFolder.set(folder, [index]);
  });
  const queues = [...byFolder.values()];
  const order: number[] = [];
  for (let round = 0; order.length < transfers.length; round++) {
    for (const queue of queues) if (round < queue.length) order.push(queue[round]!);
  }
  return order;
}

/** `/a/b/c.md` → `/a/b`; a path at the root → ``. */
function parentOf(path: string): string {
  return path.slice(0, Math.max(0, path.lastIndexOf('/')));
}
