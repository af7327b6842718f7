import { readdirSync, readlinkSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MemoryWriteRefusedError, type MemoryMounter } from '@memory-mounter/core';
import { Arena, STORE } from './arena.js';

/**
 * The write guard against the pinned-handle design (defeated; coverage the suite lacked). The
 * worker now holds each store folder open, so `/proc/self/fd/<n>` in the worker names a store
 * folder by a path that is not under memoryRoot at all. A write tool that runs in the worker and
 * is handed `/proc/self/fd/<n>/x.md` by the agent (n is easy to guess: a few dozen tries) must
 * still be judged where the kernel will write: in the read-only store. The guard follows the
 * magic link with readlink(2), which names the folder's current path, so it is refused; and the
 * same for `/proc/self/root/...` and `/proc/self/cwd/...` forms.
 *
 * (A link the agent creates between checkWrite and the tool's own open is a race between the
 * guard and the tool, outside the engine: the tool must open with O_NOFOLLOW / openat2
 * RESOLVE_BENEATH itself.)
 */
function refusal(m: MemoryMounter, path: string): string | null {
  try {
    m.checkWrite(path);
    return null;
  } catch (err) {
    if (err instanceof MemoryWriteRefusedError) return err.reason;
    throw err;
  }
}

describe.skipIf(process.platform !== 'linux')('attack: the write guard reached through /proc magic links', () => {
  it('the read-only store through the worker\'s own descriptor, /proc/self/root and /proc/self/cwd: refused', async () => {
    const arena = await Arena.create({ 'secret.txt': 'host secret\n' });
    arena.client.seed(STORE, { '/top.md': 'top\n' });
    arena.client.seed('memstore_ro', { '/guide.md': 'read me\n' });
    const mounter = arena.mounter();
    await mounter.materialize([
      arena.resource(),
      { type: 'memory_store', memory_store_id: 'memstore_ro', mount_path: '/mnt/memory/ro', access: 'read_only' },
    ]);
    const ro = `${arena.memoryRoot}/ro`;
    const fds = readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`) === ro;
      } catch {
        return false;
      }
    });
    const verdicts = {
      fds: fds.length > 0,
      viaFd: fds.map((fd) => refusal(mounter, `/proc/self/fd/${fd}/guide.md`)),
      viaFdMarker: fds.map((fd) => refusal(mounter, `/proc/self/fd/${fd}/.anthropic-memory-store`)),
      viaRoot: refusal(mounter, `/proc/self/root${ro}/guide.md`),
      viaCwd: refusal(mounter, `/proc/self/cwd/${'../'.repeat(40)}${ro.slice(1)}/guide.md`),
      viaThreadSelf: refusal(mounter, `/proc/thread-self/root${ro}/new.md`),
    };
    await mounter.finalize();
    await arena.dispose();
    expect(verdicts).toEqual({
      fds: true,
      viaFd: fds.map(() => 'read_only'),
      viaFdMarker: fds.map(() => 'outside_store'),
      viaRoot: 'read_only',
      viaCwd: 'read_only',
      viaThreadSelf: 'read_only',
    });
  });
});
