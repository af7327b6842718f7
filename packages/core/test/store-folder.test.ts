import { execFileSync } from 'node:child_process';
import * as nodeFs from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemfsFileSystem } from '@memory-mounter/testing';
import { fsError, MAX_MEMORY_BYTES, NodeFileSystem, sha256Hex, type DirHandle, type FileSystem, type OpenFile } from '@memory-mounter/core';
import { FolderRefusal, StoreFolder } from '@memory-mounter/core/engine';

/**
 * The confined store folder on each kind of handle: memfs (unpinned), the real disk with pinned
 * handles (/proc/self/fd), and the real disk with the unpinned fallback other platforms get.
 * Each test plants what a hostile agent would, through plain host calls, and checks that the
 * folder refuses or stays inside, and that the "outside" folder is untouched.
 */
type Kind = 'memfs' | 'node-pinned' | 'node-unpinned';
const KINDS: Kind[] = ['memfs', 'node-pinned', 'node-unpinned'];
const bytes = (text: string) => new TextEncoder().encode(text);

/** Host-side pokes at the disk under test: what the agent's shell does. */
interface Host {
  fs: FileSystem;
  base: string;
  write(path: string, data: string): void;
  read(path: string): string | null;
  mkdir(path: string): void;
  symlink(target: string, path: string): void;
  link(existing: string, path: string): void;
  rename(from: string, to: string): void;
  exists(path: string): boolean;
  list(path: string): string[];
  removeTree(path: string): void;
  dispose(): Promise<void>;
}

async function makeHost(kind: Kind): Promise<Host> {
  if (kind === 'memfs') {
    const fs = new MemfsFileSystem({ '/host': null });
    const vol = fs.vol;
    return {
      fs,
      base: '/host',
      write: (p, d) => vol.writeFileSync(p, d),
      read: (p) => (vol.existsSync(p) ? String(vol.readFileSync(p, 'utf8')) : null),
      mkdir: (p) => void vol.mkdirSync(p, { recursive: true }),
      symlink: (t, p) => vol.symlinkSync(t, p),
      link: (e, p) => vol.linkSync(e, p),
      // As rename(2): the replaced file loses the name (memfs's own keeps counting it in nlink).
      rename: (a, b) => {
        if (vol.existsSync(b) && !vol.lstatSync(b).isDirectory()) vol.unlinkSync(b);
        vol.renameSync(a, b);
      },
      exists: (p) => {
        try {
          vol.lstatSync(p);
          return true;
        } catch {
          return false;
        }
      },
      list: (p) => (vol.readdirSync(p) as unknown[]).map(String).sort(),
      removeTree: (p) => vol.rmSync(p, { recursive: true }),
      dispose: async () => {},
    };
  }
  const base = await realpath(await mkdtemp(join(tmpdir(), 'mm-folder-')));
  return {
    fs: new NodeFileSystem(nodeFs.constants, { pinDirectories: kind === 'node-pinned' }),
    base,
    write: (p, d) => nodeFs.writeFileSync(p, d),
    read: (p) => (nodeFs.existsSync(p) ? nodeFs.readFileSync(p, 'utf8') : null),
    mkdir: (p) => void nodeFs.mkdirSync(p, { recursive: true }),
    symlink: (t, p) => nodeFs.symlinkSync(t, p),
    link: (e, p) => nodeFs.linkSync(e, p),
    rename: (a, b) => nodeFs.renameSync(a, b),
    exists: (p) => {
      try {
        nodeFs.lstatSync(p);
        return true;
      } catch {
        return false;
      }
    },
    list: (p) => nodeFs.readdirSync(p).sort(),
    removeTree: (p) => nodeFs.rmSync(p, { recursive: true }),
    dispose: () => rm(base, { recursive: true, force: true }),
  };
}

describe.each(KINDS)('StoreFolder on %s', (kind) => {
  let host: Host;
  let store: string;
  let outside: string;
  let folder: StoreFolder;

  beforeEach(async () => {
    host = await makeHost(kind);
    store = `${host.base}/store`;
    outside = `${host.base}/outside`;
    host.mkdir(store);
    host.mkdir(outside);
    host.write(`${outside}/secret.txt`, 'host secret');
    host.write(`${outside}/a.md`, 'host a.md');
    folder = await StoreFolder.open(host.fs, store);
  });
  afterEach(async () => {
    await folder.close().catch(() => {});
    await host.dispose();
  });

  const outsideUntouched = () => {
    expect(host.list(outside)).toEqual(['a.md', 'secret.txt']);
    expect(host.read(`${outside}/secret.txt`)).toBe('host secret');
    expect(host.read(`${outside}/a.md`)).toBe('host a.md');
  };

  describe('read', () => {
    it('reads a file with its sha, says absent for nothing, and never reads a link', async () => {
      host.mkdir(`${store}/d`);
      host.write(`${store}/d/a.md`, 'alpha');
      host.symlink(`${outside}/secret.txt`, `${store}/link.md`);
      const a = await folder.read('/d/a.md');
      expect(a).toMatchObject({ kind: 'file', sha: sha256Hex('alpha'), size: 5 });
      expect(await folder.read('/nothing.md')).toEqual({ kind: 'absent' });
      expect(await folder.read('/link.md')).toMatchObject({ kind: 'other', code: 'is_symlink' });
    });

    it('a folder on the way that is a link is refused, not followed', async () => {
      host.symlink(outside, `${store}/d`);
      expect(await folder.read('/d/secret.txt')).toMatchObject({ kind: 'other', code: 'is_symlink' });
    });

    it('a hard-linked file is never read: a stat fingerprint stands for its sha, and it is unpushable', async () => {
      host.link(`${outside}/secret.txt`, `${store}/secret.md`);
      const read = await folder.read('/secret.md');
      expect(read).toMatchObject({ kind: 'file', unpushable: { code: 'hard_link' } });
      if (read.kind !== 'file') throw new Error('unreachable');
      expect(read.bytes).toBeUndefined();
      expect(read.sha).not.toBe(sha256Hex('host secret'));
    });

    it('a file over the limit is never read, sparse or not', async () => {
      if (kind === 'memfs') host.write(`${store}/big.md`, 'x'.repeat(MAX_MEMORY_BYTES + 1));
      else nodeFs.truncateSync((host.write(`${store}/big.md`, ''), `${store}/big.md`), 1 << 30);
      const read = await folder.read('/big.md');
      expect(read).toMatchObject({ kind: 'file', unpushable: { code: 'too_large' } });
      if (read.kind !== 'file') throw new Error('unreachable');
      expect(read.bytes).toBeUndefined();
    });

    it('a folder where a file is expected says so', async () => {
      host.mkdir(`${store}/d.md`);
      expect(await folder.read('/d.md')).toMatchObject({ kind: 'other', code: 'is_folder' });
    });

    it.skipIf(kind === 'memfs')('a FIFO is never read and never blocks', async () => {
      execFileSync('mkfifo', [`${store}/pipe.md`]);
      expect(await folder.read('/pipe.md')).toMatchObject({ kind: 'other', code: 'not_regular' });
    });
  });

  describe('write', () => {
    it('makes the folders on the way (0700) and writes atomically, leaving no temp file', async () => {
      await folder.write('/a/b/c.md', bytes('deep'));
      expect(host.read(`${store}/a/b/c.md`)).toBe('deep');
      expect(host.list(`${store}/a/b`)).toEqual(['c.md']);
      if (kind !== 'memfs') expect(nodeFs.lstatSync(`${store}/a`).mode & 0o777).toBe(0o700);
    });

    it('refuses when a folder on the way is a link; the link target is untouched', async () => {
      host.symlink(outside, `${store}/d`);
      await expect(folder.write('/d/a.md', bytes('pulled'))).rejects.toMatchObject({ code: 'is_symlink' });
      outsideUntouched();
    });

    it('replaces a link at the target instead of writing through it', async () => {
      host.symlink(`${outside}/a.md`, `${store}/a.md`);
      await folder.write('/a.md', bytes('pulled'));
      expect(host.read(`${store}/a.md`)).toBe('pulled');
      outsideUntouched();
    });

    it('replaces an empty folder at the target, never one that holds something', async () => {
      host.mkdir(`${store}/empty`);
      await folder.write('/empty', bytes('now a file'));
      expect(host.read(`${store}/empty`)).toBe('now a file');
      host.mkdir(`${store}/full`);
      host.write(`${store}/full/keep.md`, 'keep');
      await expect(folder.write('/full', bytes('x'))).rejects.toBeInstanceOf(FolderRefusal);
      expect(host.read(`${store}/full/keep.md`)).toBe('keep');
    });

    it('a write into a held folder the agent removed meanwhile is refused, and lands nowhere', async () => {
      host.mkdir(`${store}/d`);
      // The agent empties and removes /d after the pass opened it, right before the write.
      const hooked = new SwapBefore(host.fs, 'writeFile', '/b.md', () => host.removeTree(`${store}/d`));
      const racing = await StoreFolder.open(hooked, store);
      try {
        await racing.write('/d/a.md', bytes('first')); // holds /d for the rest of the pass
        await expect(racing.write('/d/b.md', bytes('second'))).rejects.toMatchObject({ code: 'swapped' });
      } finally {
        await racing.close();
      }
      expect(host.list(store)).toEqual([]);
      outsideUntouched();
    });
  });

  describe('unlink', () => {
    it('removes a file; through a linked folder it refuses and the target is untouched', async () => {
      host.write(`${store}/a.md`, 'alpha');
      await folder.unlink('/a.md');
      expect(host.exists(`${store}/a.md`)).toBe(false);
      host.symlink(outside, `${store}/d`);
      await expect(folder.unlink('/d/a.md')).rejects.toMatchObject({ code: 'is_symlink' });
      outsideUntouched();
    });
  });

  describe('removeAll', () => {
    it('removes the whole folder and never follows a link, at any depth', async () => {
      host.mkdir(`${store}/a/b/c`);
      host.write(`${store}/a/b/c/f.md`, 'f');
      host.symlink(outside, `${store}/top-link`);
      host.symlink(outside, `${store}/a/b/mid-link`);
      host.symlink(`${outside}/secret.txt`, `${store}/a/b/c/file-link`);
      host.link(`${outside}/a.md`, `${store}/a/hard.md`);
      await folder.removeAll();
      expect(host.exists(store)).toBe(false);
      outsideUntouched();
    });

    it('removes a folder of many files several at a time, never more than 16 at once', async () => {
      host.mkdir(`${store}/d`);
      for (let i = 0; i < 100; i++) host.write(`${store}/n${i}.md`, `${i}`);
      for (let i = 0; i < 20; i++) host.write(`${store}/d/m${i}.md`, `${i}`);
      const counting = new Counting(host.fs, 5);
      const removing = await StoreFolder.open(counting, store);
      await removing.removeAll();
      expect(host.exists(store)).toBe(false);
      expect(counting.peak.rm).toBeGreaterThan(1);
      expect(counting.peak.rm).toBeLessThanOrEqual(16);
      outsideUntouched();
    });
  });

  describe('removeAll, cut short', () => {
    it('the marker goes last: a removal that fails part-way leaves the folder with its marker', async () => {
      host.write(`${store}/.anthropic-memory-store`, '{"memory_store_id":"memstore_x"}');
      host.write(`${store}/top.md`, 'top');
      host.mkdir(`${store}/sub`);
      host.write(`${store}/sub/a.md`, 'a');
      // What a folder the agent locked answers, where its owner cannot be given access back.
      const denied = Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
      const failing = new SwapBefore(host.fs, 'rm', '/a.md', () => {
        throw denied;
      });
      const removing = await StoreFolder.open(failing, store);
      try {
        await expect(removing.removeAll()).rejects.toMatchObject({ code: 'EACCES' });
      } finally {
        await removing.close();
      }
      expect(host.read(`${store}/.anthropic-memory-store`)).toBe('{"memory_store_id":"memstore_x"}');
    });
  });

  describe('errors', () => {
    it('name the host path the operator knows, never a descriptor path (/proc/self/fd/N)', async () => {
      host.mkdir(`${store}/d`);
      // What a read-only remount answers every write with.
      const readOnly = new Proxy(host.fs, {
        get(target, prop, receiver) {
          if (prop === 'writeFile') return async (path: string) => Promise.reject(fsError('EROFS', 'open', path, 'read-only file system'));
          const value: unknown = Reflect.get(target, prop, receiver);
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
      const writing = await StoreFolder.open(readOnly, store);
      try {
        const err = (await writing.write('/d/a.md', bytes('x')).catch((e: unknown) => e)) as NodeJS.ErrnoException;
        expect(err.code).toBe('EROFS');
        expect(err.message).toContain(`'${store}/d/a.md'`);
        expect(err.path).toBe(`${store}/d/a.md`);
      } finally {
        await writing.close();
      }
    });
  });

  describe('locate', () => {
    it('a different folder at the store path is never adopted, and nothing is done in it', async () => {
      host.write(`${store}/a.md`, 'ours');
      host.rename(store, `${host.base}/store-old`);
      host.mkdir(store);
      host.write(`${store}/theirs.md`, 'theirs');
      expect(await folder.locate()).toBe('replaced');
      host.removeTree(store);
      expect(await folder.locate()).toBe('missing');
      host.symlink(outside, store);
      expect(await folder.locate()).toBe('not_directory');
      outsideUntouched();
    });
  });

  describe('parallel acts in one folder', () => {
    it('writes racing into a folder not held yet open it once between them', async () => {
      host.mkdir(`${store}/d`);
      const counting = new Counting(host.fs, 5);
      const racing = await StoreFolder.open(counting, store);
      try {
        await Promise.all(Array.from({ length: 20 }, (_, i) => racing.write(`/d/n${i}.md`, bytes(`note ${i}`), { onlyIfAbsent: true })));
        expect(counting.calls.openDir.filter((p) => p.endsWith('/d'))).toHaveLength(1);
        // A folder made by the first write: one failed open, the mkdir, one open; the others wait.
        await Promise.all(Array.from({ length: 20 }, (_, i) => racing.write(`/e/n${i}.md`, bytes(`note ${i}`))));
        expect(counting.calls.openDir.filter((p) => p.endsWith('/e'))).toHaveLength(2);
      } finally {
        await racing.close();
      }
      expect(host.list(`${store}/d`)).toHaveLength(20);
      expect(host.list(`${store}/e`)).toHaveLength(20);
      expect(host.read(`${store}/e/n7.md`)).toBe('note 7');
    });
  });

  describe('walk', () => {
    it('lists files by folder, reports links and special entries, and skips what it is told to', async () => {
      host.mkdir(`${store}/d`);
      host.write(`${store}/a.md`, 'a');
      host.write(`${store}/d/b.md`, 'b');
      host.write(`${store}/skip.md`, 's');
      host.symlink(outside, `${store}/out`);
      const files: string[] = [];
      const blocked: string[] = [];
      await folder.walk(
        async (visit) => {
          files.push(...visit.files.map((f) => f.wirePath));
          blocked.push(...visit.blocked.map((b) => `${b.wirePath}: ${b.reason}`));
        },
        (_dir, entry) => entry.name === 'skip.md',
      );
      expect(files.sort()).toEqual(['/a.md', '/d/b.md']);
      expect(blocked).toEqual(['/out: is a symlink']);
    });

    it('a folder deeper than any memory path is reported once and never entered', async () => {
      const deep = Array.from({ length: 25 }, (_, i) => `d${i}`);
      host.mkdir(`${store}/${deep.join('/')}`);
      host.write(`${store}/${deep.join('/')}/bottom.md`, 'unreachable as a memory');
      const files: string[] = [];
      const blocked: string[] = [];
      await folder.walk(
        async (visit) => {
          files.push(...visit.files.map((f) => f.wirePath));
          blocked.push(...visit.blocked.map((b) => b.wirePath));
        },
        () => false,
      );
      expect(files).toEqual([]);
      expect(blocked).toEqual([`/${deep.slice(0, 20).join('/')}`]);
    });

    it.skipIf(kind === 'memfs')('a name that is not UTF-8 is reported, never read as a file', async () => {
      nodeFs.writeFileSync(Buffer.concat([Buffer.from(`${store}/`), Buffer.from([0x6e, 0xff, 0x2e, 0x6d, 0x64])]), 'latin');
      const blocked: string[] = [];
      await folder.walk(async (visit) => void blocked.push(...visit.blocked.map((b) => b.reason)), () => false);
      expect(blocked).toEqual([expect.stringMatching(/not UTF-8/)]);
    });
  });

  describe('move', () => {
    const identity = async (path: string) => {
      const stat = await host.fs.lstat(path);
      return { dev: stat!.dev, ino: stat!.ino };
    };

    it('renames the file itself into a new folder (made 0700): same inode, nothing copied', async () => {
      host.write(`${store}/a.md`, 'alpha');
      const before = await identity(`${store}/a.md`);
      await folder.move('/a.md', '/x/y/b.md', before);
      expect(host.exists(`${store}/a.md`)).toBe(false);
      expect(host.read(`${store}/x/y/b.md`)).toBe('alpha');
      expect(await identity(`${store}/x/y/b.md`)).toEqual(before);
      if (kind !== 'memfs') expect(nodeFs.lstatSync(`${store}/x`).mode & 0o777).toBe(0o700);
    });

    it('never replaces what is at the target (a file, a link, a folder of files); an empty folder goes', async () => {
      host.write(`${store}/a.md`, 'alpha');
      const a = await identity(`${store}/a.md`);
      host.write(`${store}/taken.md`, 'taken');
      host.symlink(`${outside}/a.md`, `${store}/link.md`);
      host.mkdir(`${store}/full`);
      host.write(`${store}/full/keep.md`, 'keep');
      for (const target of ['/taken.md', '/link.md', '/full']) {
        await expect(folder.move('/a.md', target, a)).rejects.toMatchObject({ code: 'taken' });
      }
      expect(host.read(`${store}/a.md`)).toBe('alpha');
      expect(host.read(`${store}/taken.md`)).toBe('taken');
      expect(host.read(`${store}/full/keep.md`)).toBe('keep');
      host.mkdir(`${store}/empty`);
      await folder.move('/a.md', '/empty', a);
      expect(host.read(`${store}/empty`)).toBe('alpha');
      outsideUntouched();
    });

    it('never moves a link, a folder or a file other than the one planned for', async () => {
      host.symlink(`${outside}/secret.txt`, `${store}/link.md`);
      const link = await identity(`${store}/link.md`);
      await expect(folder.move('/link.md', '/b.md', link)).rejects.toMatchObject({ code: 'is_symlink' });
      host.mkdir(`${store}/d`);
      await expect(folder.move('/d', '/b.md', await identity(`${store}/d`))).rejects.toMatchObject({ code: 'is_folder' });
      host.write(`${store}/a.md`, 'alpha');
      const planned = await identity(`${store}/a.md`);
      nodeOrMemfsReplace(host, `${store}/a.md`, 'swapped in');
      await expect(folder.move('/a.md', '/b.md', planned)).rejects.toMatchObject({ code: 'swapped' });
      await expect(folder.move('/gone.md', '/b.md', planned)).rejects.toMatchObject({ code: 'swapped' });
      expect(host.exists(`${store}/b.md`)).toBe(false);
      expect(host.read(`${store}/a.md`)).toBe('swapped in');
      outsideUntouched();
    });

    it('a folder on the way to the target that is a link is refused, not followed', async () => {
      host.write(`${store}/a.md`, 'alpha');
      host.symlink(outside, `${store}/d`);
      await expect(folder.move('/a.md', '/d/b.md', await identity(`${store}/a.md`))).rejects.toMatchObject({ code: 'is_symlink' });
      expect(host.read(`${store}/a.md`)).toBe('alpha');
      outsideUntouched();
    });

    it('the source folder swapped for a link to outside right before the rename: nothing moves in from outside', async () => {
      host.mkdir(`${store}/d`);
      host.write(`${store}/d/a.md`, 'alpha');
      const planned = await identity(`${store}/d/a.md`);
      const hooked = new SwapBefore(host.fs, 'rename', '/a.md', () => {
        host.rename(`${store}/d`, `${store}/moved`);
        host.symlink(outside, `${store}/d`);
      });
      const swapped = await StoreFolder.open(hooked, store);
      try {
        const moving = swapped.move('/d/a.md', '/b.md', planned);
        // Pinned: the held folder is moved from, wherever it went. Unpinned: the swap is seen and undone.
        if (kind === 'node-pinned') await moving;
        else await expect(moving).rejects.toMatchObject({ code: 'swapped' });
      } finally {
        await swapped.close();
      }
      if (kind === 'node-pinned') expect(host.read(`${store}/b.md`)).toBe('alpha');
      // memfs's rename does not resolve a link in the middle of its destination (ENOTDIR), so the
      // put-back through the swapped name cannot reach outside there; the real disk shows it does.
      if (kind !== 'memfs') outsideUntouched();
    });
  });

  describe('move, the agent saving at either name while the file moves', () => {
    const identity = async (path: string) => {
      const stat = await host.fs.lstat(path);
      return { dev: stat!.dev, ino: stat!.ino };
    };

    it('a note saved at the target right after its check is never replaced: refused (taken), nothing moved', async () => {
      host.write(`${store}/a.md`, 'alpha');
      const planned = await identity(`${store}/a.md`);
      // The agent saves b.md the instant the engine has found the name free.
      const hooked = afterCalls(host.fs, [{ op: 'lstat', suffix: '/b.md', then: () => host.write(`${store}/b.md`, "the agent's note") }]);
      const moving = await StoreFolder.open(hooked.fs, store);
      try {
        await expect(moving.move('/a.md', '/b.md', planned)).rejects.toMatchObject({ code: 'taken' });
      } finally {
        await moving.close();
      }
      expect(hooked.fired).toBe(1);
      expect(host.read(`${store}/b.md`)).toBe("the agent's note");
      expect(host.read(`${store}/a.md`)).toBe('alpha');
      expect(await identity(`${store}/a.md`)).toEqual(planned);
      expect((await host.fs.lstat(`${store}/a.md`))!.nlink).toBe(1);
      outsideUntouched();
    });

    it('a note saved at the source once the file has its new name stays there; the moved file is at the target', async () => {
      host.write(`${store}/a.md`, 'alpha');
      const planned = await identity(`${store}/a.md`);
      // The agent replaces a.md (a new file, renamed into place) after the engine's last look at it.
      const hooked = afterCalls(host.fs, [
        { op: 'link', suffix: '/b.md', then: () => {} },
        { op: 'lstat', suffix: '/a.md', then: () => nodeOrMemfsReplace(host, `${store}/a.md`, "the agent's note") },
      ]);
      const moving = await StoreFolder.open(hooked.fs, store);
      try {
        await moving.move('/a.md', '/b.md', planned);
      } finally {
        await moving.close();
      }
      expect(hooked.fired).toBe(2);
      expect(host.read(`${store}/a.md`)).toBe("the agent's note");
      expect(host.read(`${store}/b.md`)).toBe('alpha');
      expect(await identity(`${store}/b.md`)).toEqual(planned);
      expect((await host.fs.lstat(`${store}/b.md`))!.nlink).toBe(1);
      expect(host.list(store).filter((n) => n.startsWith('.mm-tmp-'))).toEqual([]);
    });

    it('saved at the source twice in that instant: the last note is at the source, the one before kept beside it', async () => {
      host.write(`${store}/a.md`, 'alpha');
      const planned = await identity(`${store}/a.md`);
      const hooked = afterCalls(host.fs, [
        { op: 'link', suffix: '/b.md', then: () => {} },
        { op: 'lstat', suffix: '/a.md', then: () => nodeOrMemfsReplace(host, `${store}/a.md`, 'first note') },
        { op: 'rename', suffix: '/a.md', then: () => host.write(`${store}/a.md`, 'second note') },
      ]);
      const moving = await StoreFolder.open(hooked.fs, store);
      try {
        await moving.move('/a.md', '/b.md', planned);
      } finally {
        await moving.close();
      }
      expect(hooked.fired).toBe(3);
      expect(host.read(`${store}/b.md`)).toBe('alpha');
      expect(host.read(`${store}/a.md`)).toBe('second note');
      const copies = host.list(store).filter((n) => /^a\.conflict-\d{8}T\d{9}Z\.md$/.test(n));
      expect(copies).toHaveLength(1);
      expect(host.read(`${store}/${copies[0]}`)).toBe('first note');
      expect(host.list(store).filter((n) => n.startsWith('.mm-tmp-'))).toEqual([]);
    });

    it('a seam without link moves as before, by one rename', async () => {
      host.write(`${store}/a.md`, 'alpha');
      const planned = await identity(`${store}/a.md`);
      const { link: _link, ...rest } = { link: undefined, ...bindAll(host.fs) };
      const moving = await StoreFolder.open(rest as FileSystem, store);
      try {
        await moving.move('/a.md', '/x/b.md', planned);
      } finally {
        await moving.close();
      }
      expect(host.read(`${store}/x/b.md`)).toBe('alpha');
      expect(host.exists(`${store}/a.md`)).toBe(false);
    });
  });

  describe('a folder swapped between two steps', () => {
    it('pinned handles act on the opened folder wherever it went; unpinned ones refuse', async () => {
      host.mkdir(`${store}/d`);
      host.write(`${store}/d/a.md`, 'alpha');
      const hooked = new SwapBefore(host.fs, 'openFile', '/a.md', () => {
        host.rename(`${store}/d`, `${store}/moved`);
        host.symlink(outside, `${store}/d`);
      });
      const swapped = await StoreFolder.open(hooked, store);
      try {
        const read = await swapped.read('/d/a.md');
        if (kind === 'node-pinned') expect(read).toMatchObject({ kind: 'file', sha: sha256Hex('alpha') });
        else expect(read).toMatchObject({ kind: 'other', code: 'swapped' });
      } finally {
        await swapped.close();
      }
      outsideUntouched();
    });
  });
});

/** Replaces the file at `path` with a new one (a new inode), as an agent's editor may. */
function nodeOrMemfsReplace(host: Host, path: string, content: string): void {
  host.write(`${path}.new`, content);
  host.rename(`${path}.new`, path);
}

/** `fs`'s members, each bound to it (the optional ones it has), as a plain object. */
function bindAll(fs: FileSystem): FileSystem {
  const out: Record<string, unknown> = {};
  for (const key of ['lstat', 'lstatAll', 'readdir', 'readFile', 'writeFile', 'writeFileExclusive', 'link', 'mkdir', 'rm', 'rename', 'openDir', 'openFile', 'readLinkSync'] as const) {
    const member = fs[key] as unknown;
    if (typeof member === 'function') out[key] = (member as (...a: unknown[]) => unknown).bind(fs);
  }
  return out as unknown as FileSystem;
}

/**
 * Delegates to `inner` (its handles stay pinned or not) and runs each hook once, in order, right
 * after the first call of its `op` on a path ending with `suffix` (for `link` and `rename`, the
 * second path for link, the first for rename) has returned: the agent acting between two of the
 * engine's steps. `fired` counts the hooks run.
 */
function afterCalls(inner: FileSystem, hooks: { op: 'lstat' | 'link' | 'rename'; suffix: string; then: () => void }[]): { fs: FileSystem; fired: number } {
  const state = { fs: bindAll(inner), fired: 0 };
  const wrap = (op: 'lstat' | 'link' | 'rename', pick: (args: string[]) => string) => {
    const call = (state.fs as unknown as Record<string, (...a: string[]) => Promise<unknown>>)[op];
    if (!call) return;
    (state.fs as unknown as Record<string, unknown>)[op] = async (...args: string[]) => {
      const result = await call(...args);
      const next = hooks[state.fired];
      if (next && next.op === op && pick(args).endsWith(next.suffix)) {
        state.fired++;
        next.then();
      }
      return result;
    };
  };
  wrap('lstat', (a) => a[0]!);
  wrap('link', (a) => a[1]!);
  wrap('rename', (a) => a[0]!);
  return state;
}

/**
 * Delegates to `inner` (keeping its handles pinned or not) and runs `swap` once, right before
 * the first `op` whose path ends with `suffix`: the agent acting between the engine's steps.
 */
class SwapBefore implements FileSystem {
  #armed = true;
  constructor(
    private readonly inner: FileSystem,
    private readonly op: 'openFile' | 'writeFile' | 'rm' | 'rename',
    private readonly suffix: string,
    private readonly swap: () => void,
  ) {}
  #maybe(op: string, path: string): void {
    if (this.#armed && op === this.op && path.endsWith(this.suffix)) {
      this.#armed = false;
      this.swap();
    }
  }
  lstat = (p: string) => this.inner.lstat(p);
  readdir = (p: string) => this.inner.readdir(p);
  readFile = (p: string) => this.inner.readFile(p);
  writeFile = (p: string, d: Uint8Array, o?: { mode?: number }) => (this.#maybe('writeFile', p), this.inner.writeFile(p, d, o));
  mkdir = (p: string, o?: { mode?: number; recursive?: boolean }) => this.inner.mkdir(p, o);
  rm = (p: string, o?: { recursive?: boolean }) => (this.#maybe('rm', p), this.inner.rm(p, o));
  rename = (a: string, b: string) => (this.#maybe('rename', a), this.inner.rename(a, b));
  openDir = (p: string): Promise<DirHandle> => this.inner.openDir(p);
  openFile = (p: string): Promise<OpenFile> => (this.#maybe('openFile', p), this.inner.openFile(p));
}

/** Delegates to `inner`, recording each call's path and the most calls of a kind in flight at once; `delayMs` keeps them in flight. */
class Counting implements FileSystem {
  readonly calls: Record<'openDir' | 'rm' | 'writeFile', string[]> = { openDir: [], rm: [], writeFile: [] };
  readonly peak: Record<'openDir' | 'rm' | 'writeFile', number> = { openDir: 0, rm: 0, writeFile: 0 };
  readonly #now: Record<'openDir' | 'rm' | 'writeFile', number> = { openDir: 0, rm: 0, writeFile: 0 };
  constructor(
    private readonly inner: FileSystem,
    private readonly delayMs: number,
  ) {}
  async #track<T>(op: 'openDir' | 'rm' | 'writeFile', path: string, call: () => Promise<T>): Promise<T> {
    this.calls[op].push(path);
    this.peak[op] = Math.max(this.peak[op], ++this.#now[op]);
    try {
      await new Promise((resolve) => setTimeout(resolve, this.delayMs));
      return await call();
    } finally {
      this.#now[op]--;
    }
  }
  lstat = (p: string) => this.inner.lstat(p);
  readdir = (p: string) => this.inner.readdir(p);
  readFile = (p: string) => this.inner.readFile(p);
  writeFile = (p: string, d: Uint8Array, o?: { mode?: number }) => this.#track('writeFile', p, () => this.inner.writeFile(p, d, o));
  mkdir = (p: string, o?: { mode?: number; recursive?: boolean }) => this.inner.mkdir(p, o);
  rm = (p: string, o?: { recursive?: boolean }) => this.#track('rm', p, () => this.inner.rm(p, o));
  rename = (a: string, b: string) => this.inner.rename(a, b);
  openDir = (p: string): Promise<DirHandle> => this.#track('openDir', p, () => this.inner.openDir(p));
  openFile = (p: string): Promise<OpenFile> => this.inner.openFile(p);
}
