import type { FileSystem } from '@memory-mounter/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

/** A fresh, empty directory `root` on the filesystem under test, and the means to poke it. */
export interface FileSystemHarness {
  fs: FileSystem;
  root: string;
  cleanup(): Promise<void>;
  makeSymlink(target: string, path: string): Promise<void>;
  /** link(2), where the filesystem under test has hard links. */
  makeHardLink?(existing: string, path: string): Promise<void>;
  /** Permission bits of the entry at `path` (not following links). */
  modeOf(path: string): Promise<number>;
}

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (data: Uint8Array) => new TextDecoder().decode(data);

/**
 * The FileSystem contract (core/src/local/file-system.ts) as tests. Every implementation runs it, so
 * the in-memory one used by unit tests cannot drift from the real disk.
 */
export function fileSystemConformance(name: string, makeFs: () => Promise<FileSystemHarness>): void {
  describe(`FileSystem conformance: ${name}`, () => {
    let h: FileSystemHarness;
    let fs: FileSystem;
    let root: string;
    const at = (rel: string) => `${root}/${rel}`;
    const read = async (rel: string) => text(await fs.readFile(at(rel)));
    const names = async (rel = '') => (await fs.readdir(rel ? at(rel) : root)).map((e) => e.name).sort();

    beforeEach(async () => {
      h = await makeFs();
      ({ fs, root } = h);
    });
    afterEach(async () => {
      await h.cleanup();
    });

    describe('lstat', () => {
      it('is null when nothing is there, or a parent is a file', async () => {
        await fs.writeFile(at('f'), bytes('x'));
        expect(await fs.lstat(at('absent'))).toBeNull();
        expect(await fs.lstat(at('f/child'))).toBeNull();
      });

      it('describes files, directories and links themselves', async () => {
        await fs.writeFile(at('f'), bytes('hello'));
        await fs.mkdir(at('d'));
        await h.makeSymlink(at('f'), at('link'));
        await h.makeSymlink(at('nowhere'), at('dangling'));

        const file = await fs.lstat(at('f'));
        expect(file).toMatchObject({ type: 'file', size: 5 });
        expect(file?.mtimeMs).toBeGreaterThan(0);
        expect(file?.ctimeMs).toBeGreaterThan(0);
        expect((await fs.lstat(at('d')))?.type).toBe('directory');
        expect((await fs.lstat(at('link')))?.type).toBe('symlink');
        expect((await fs.lstat(at('dangling')))?.type).toBe('symlink');
      });
    });

    describe('lstatAll (optional)', () => {
      it('answers for each path, in order, what lstat answers for it', async ({ skip }) => {
        if (!fs.lstatAll) return skip('this filesystem has no lstatAll');
        await fs.writeFile(at('f'), bytes('hello'));
        await fs.mkdir(at('d'));
        await h.makeSymlink(at('f'), at('link'));
        await h.makeSymlink(at('nowhere'), at('dangling'));
        const paths = ['f', 'absent', 'd', 'link', 'f/child', 'dangling', 'f'].map(at);
        const all = await fs.lstatAll(paths);
        expect(all).toEqual(await Promise.all(paths.map((path) => fs.lstat(path))));
        expect(all.map((stat) => stat?.type ?? null)).toEqual(['file', null, 'directory', 'symlink', null, 'symlink', 'file']);
        expect(await fs.lstatAll([])).toEqual([]);
      });

      it('rejects when a path fails otherwise than by being absent', async ({ skip }) => {
        if (!fs.lstatAll) return skip('this filesystem has no lstatAll');
        await fs.writeFile(at('f'), bytes('x'));
        await expect(fs.lstatAll([at('f'), at('n'.repeat(300))])).rejects.toMatchObject({ code: 'ENAMETOOLONG' });
      });
    });

    describe('readdir', () => {
      it('lists names with the type of each entry, links not followed', async () => {
        await fs.writeFile(at('f'), bytes('x'));
        await fs.mkdir(at('d'));
        await h.makeSymlink(at('d'), at('link-to-dir'));
        await h.makeSymlink(at('f'), at('link-to-file'));

        const entries = (await fs.readdir(root)).sort((a, b) => a.name.localeCompare(b.name));
        expect(entries).toEqual([
          { name: 'd', type: 'directory' },
          { name: 'f', type: 'file' },
          { name: 'link-to-dir', type: 'symlink' },
          { name: 'link-to-file', type: 'symlink' },
        ]);
      });

      it('refuses a symlink to a directory (ENOTDIR), a file (ENOTDIR) and an absent path (ENOENT)', async () => {
        await fs.mkdir(at('d'));
        await fs.writeFile(at('d/inside'), bytes('x'));
        await fs.writeFile(at('f'), bytes('x'));
        await h.makeSymlink(at('d'), at('link'));
        await expect(fs.readdir(at('link'))).rejects.toMatchObject({ code: 'ENOTDIR' });
        await expect(fs.readdir(at('f'))).rejects.toMatchObject({ code: 'ENOTDIR' });
        await expect(fs.readdir(at('absent'))).rejects.toMatchObject({ code: 'ENOENT' });
      });
    });

    describe('readFile', () => {
      it('returns the bytes of a regular file', async () => {
        await fs.writeFile(at('f'), bytes('héllo'));
        expect(await read('f')).toBe('héllo');
      });

      it('refuses a symlink with ELOOP, never reading its target', async () => {
        await fs.writeFile(at('secret'), bytes('secret'));
        await h.makeSymlink(at('secret'), at('link'));
        await expect(fs.readFile(at('link'))).rejects.toMatchObject({ code: 'ELOOP' });
      });

      it('refuses a directory with EINVAL and an absent file with ENOENT', async () => {
        await fs.mkdir(at('d'));
        await expect(fs.readFile(at('d'))).rejects.toMatchObject({ code: 'EINVAL' });
        await expect(fs.readFile(at('absent'))).rejects.toMatchObject({ code: 'ENOENT' });
      });
    });

    describe('writeFile', () => {
      it('creates a file, then replaces its content, leaving no temp file behind', async () => {
        await fs.writeFile(at('f'), bytes('one'));
        expect(await read('f')).toBe('one');
        await fs.writeFile(at('f'), bytes('two, longer'));
        expect(await read('f')).toBe('two, longer');
        await fs.writeFile(at('f'), bytes(''));
        expect(await read('f')).toBe('');
        expect(await names()).toEqual(['f']);
      });

      it('calls beforeReplace with the new content whole in a temp file and the target untouched; a throw abandons the write', async () => {
        await fs.writeFile(at('f'), bytes('old'));
        const seen: { names: string[]; content: string }[] = [];
        await fs.writeFile(at('f'), bytes('new'), {
          beforeReplace: async () => {
            const temp = (await names()).find((name) => name !== 'f')!;
            seen.push({ names: await names(), content: await read('f') + '|' + (await read(temp)) });
          },
        });
        expect(seen).toHaveLength(1);
        expect(seen[0]!.names).toHaveLength(2);
        expect(seen[0]!.content).toBe('old|new');
        expect(await read('f')).toBe('new');
        const refusal = new Error('changed meanwhile');
        await expect(fs.writeFile(at('f'), bytes('newer'), { beforeReplace: async () => Promise.reject(refusal) })).rejects.toBe(refusal);
        expect(await read('f')).toBe('new');
        expect(await names()).toEqual(['f']);
      });

      it('replaces a symlink at the target instead of writing through it', async () => {
        await fs.writeFile(at('victim'), bytes('original'));
        await h.makeSymlink(at('victim'), at('link'));
        await fs.writeFile(at('link'), bytes('new'));

        expect((await fs.lstat(at('link')))?.type).toBe('file');
        expect(await read('link')).toBe('new');
        expect(await read('victim')).toBe('original');
      });

      it('replaces a dangling symlink without creating its target', async () => {
        await h.makeSymlink(at('target'), at('link'));
        await fs.writeFile(at('link'), bytes('new'));
        expect((await fs.lstat(at('link')))?.type).toBe('file');
        expect(await fs.lstat(at('target'))).toBeNull();
      });

      it('removes its temp file when the final rename fails', async () => {
        await fs.mkdir(at('d'));
        await fs.writeFile(at('d/inside'), bytes('x'));
        await expect(fs.writeFile(at('d'), bytes('x'))).rejects.toHaveProperty('code');
        expect(await names()).toEqual(['d']);
        expect(await names('d')).toEqual(['inside']);
      });

      it('fails with ENOENT when the directory is missing', async () => {
        await expect(fs.writeFile(at('absent/f'), bytes('x'))).rejects.toMatchObject({ code: 'ENOENT' });
      });

      it('creates files 0600 by default and honours an explicit mode', async () => {
        await fs.writeFile(at('private'), bytes('x'));
        await fs.writeFile(at('readonly'), bytes('x'), { mode: 0o400 });
        expect(await h.modeOf(at('private'))).toBe(0o600);
        expect(await h.modeOf(at('readonly'))).toBe(0o400);
      });
    });

    // Both make a new file that never replaces an entry: writeFileExclusive atomically, createFile in place.
    describe.each(['writeFileExclusive', 'createFile'] as const)('%s (optional)', (op) => {
      it('creates a file with its content and mode, leaving no temp file behind', async ({ skip }) => {
        if (!fs[op]) return skip(`this filesystem has no ${op}`);
        await fs[op]!(at('f'), bytes('one'));
        await fs[op]!(at('g'), bytes(''), { mode: 0o640 });
        expect(await read('f')).toBe('one');
        expect(await read('g')).toBe('');
        expect(await h.modeOf(at('f'))).toBe(0o600);
        expect(await h.modeOf(at('g'))).toBe(0o640);
        expect(await names()).toEqual(['f', 'g']);
      });

      it('never replaces anything: a file, a folder, a link or a dangling one is left as it was (EEXIST)', async ({ skip }) => {
        if (!fs[op]) return skip(`this filesystem has no ${op}`);
        await fs.writeFile(at('file'), bytes('theirs'));
        await fs.mkdir(at('folder'));
        await fs.writeFile(at('victim'), bytes('original'));
        await h.makeSymlink(at('victim'), at('link'));
        await h.makeSymlink(at('nowhere'), at('dangling'));
        for (const name of ['file', 'folder', 'link', 'dangling']) {
          await expect(fs[op]!(at(name), bytes('mine'))).rejects.toMatchObject({ code: 'EEXIST' });
        }
        expect(await read('file')).toBe('theirs');
        expect((await fs.lstat(at('folder')))?.type).toBe('directory');
        expect((await fs.lstat(at('link')))?.type).toBe('symlink');
        expect(await read('victim')).toBe('original');
        expect((await fs.lstat(at('dangling')))?.type).toBe('symlink');
        expect(await fs.lstat(at('nowhere'))).toBeNull();
        expect(await names()).toEqual(['dangling', 'file', 'folder', 'link', 'victim']);
      });

      it('fails with ENOENT when the directory is missing', async ({ skip }) => {
        if (!fs[op]) return skip(`this filesystem has no ${op}`);
        await expect(fs[op]!(at('missing/f'), bytes('x'))).rejects.toMatchObject({ code: 'ENOENT' });
      });
    });

    describe('link (optional)', () => {
      it('gives the file a second name: the same inode, two links; a rename over one of them drops it', async ({ skip }) => {
        if (!fs.link) return skip('this filesystem has no link');
        await fs.writeFile(at('f'), bytes('one'));
        await fs.link(at('f'), at('g'));
        const [f, g] = [await fs.lstat(at('f')), await fs.lstat(at('g'))];
        expect(g).toMatchObject({ type: 'file', dev: f!.dev, ino: f!.ino, nlink: 2 });
        expect(await read('g')).toBe('one');
        await fs.writeFile(at('f'), bytes('two'));
        expect(await fs.lstat(at('g'))).toMatchObject({ ino: f!.ino, nlink: 1 });
        expect(await read('g')).toBe('one');
      });

      it('never replaces anything: a file, a folder, a link or a dangling one is left as it was (EEXIST)', async ({ skip }) => {
        if (!fs.link) return skip('this filesystem has no link');
        await fs.writeFile(at('src'), bytes('mine'));
        await fs.writeFile(at('file'), bytes('theirs'));
        await fs.mkdir(at('folder'));
        await h.makeSymlink(at('file'), at('link'));
        await h.makeSymlink(at('nowhere'), at('dangling'));
        for (const name of ['file', 'folder', 'link', 'dangling']) {
          await expect(fs.link(at('src'), at(name))).rejects.toMatchObject({ code: 'EEXIST' });
        }
        expect(await read('file')).toBe('theirs');
        expect((await fs.lstat(at('link')))?.type).toBe('symlink');
        expect(await fs.lstat(at('nowhere'))).toBeNull();
        expect((await fs.lstat(at('src')))?.nlink).toBe(1);
      });

      it('fails with ENOENT when the source is missing', async ({ skip }) => {
        if (!fs.link) return skip('this filesystem has no link');
        await expect(fs.link(at('missing'), at('g'))).rejects.toMatchObject({ code: 'ENOENT' });
        expect(await fs.lstat(at('g'))).toBeNull();
      });
    });

    describe('mkdir', () => {
      it('creates a directory 0700 by default and honours an explicit mode', async () => {
        await fs.mkdir(at('d'));
        await fs.mkdir(at('e'), { mode: 0o500 });
        expect((await fs.lstat(at('d')))?.type).toBe('directory');
        expect(await h.modeOf(at('d'))).toBe(0o700);
        expect(await h.modeOf(at('e'))).toBe(0o500);
      });

      it('without recursive, fails with EEXIST on anything already there', async () => {
        await fs.mkdir(at('d'));
        await fs.writeFile(at('f'), bytes('x'));
        await h.makeSymlink(at('d'), at('link'));
        await h.makeSymlink(at('nowhere'), at('dangling'));
        for (const rel of ['d', 'f', 'link', 'dangling']) {
          await expect(fs.mkdir(at(rel)), rel).rejects.toMatchObject({ code: 'EEXIST' });
        }
        expect(await fs.lstat(at('nowhere'))).toBeNull();
      });

      it('without recursive, fails with ENOENT when the parent is missing', async () => {
        await expect(fs.mkdir(at('a/b'))).rejects.toMatchObject({ code: 'ENOENT' });
      });

      it('with recursive, creates every missing directory with the mode and accepts an existing one', async () => {
        await fs.mkdir(at('a/b/c'), { recursive: true });
        await fs.mkdir(at('a/b/c'), { recursive: true });
        expect((await fs.lstat(at('a/b/c')))?.type).toBe('directory');
        expect(await h.modeOf(at('a/b'))).toBe(0o700);
      });

      it('with recursive, fails with EEXIST on a file or a symlink at the path', async () => {
        await fs.mkdir(at('d'));
        await fs.writeFile(at('f'), bytes('x'));
        await h.makeSymlink(at('d'), at('link'));
        await expect(fs.mkdir(at('f'), { recursive: true })).rejects.toMatchObject({ code: 'EEXIST' });
        await expect(fs.mkdir(at('link'), { recursive: true })).rejects.toMatchObject({ code: 'EEXIST' });
      });
    });

    describe('rm', () => {
      it('accepts an absent path, with or without recursive', async () => {
        await expect(fs.rm(at('absent'))).resolves.toBeUndefined();
        await expect(fs.rm(at('absent/deeper'), { recursive: true })).resolves.toBeUndefined();
      });

      it('removes a file', async () => {
        await fs.writeFile(at('f'), bytes('x'));
        await fs.rm(at('f'));
        expect(await fs.lstat(at('f'))).toBeNull();
      });

      it('removes a link, never its target, with or without recursive', async () => {
        await fs.writeFile(at('file'), bytes('keep'));
        await fs.mkdir(at('dir'));
        await fs.writeFile(at('dir/inside'), bytes('keep'));
        await h.makeSymlink(at('file'), at('link-to-file'));
        await h.makeSymlink(at('dir'), at('link-to-dir'));

        await fs.rm(at('link-to-file'));
        await fs.rm(at('link-to-dir'), { recursive: true });

        expect(await names()).toEqual(['dir', 'file']);
        expect(await read('file')).toBe('keep');
        expect(await read('dir/inside')).toBe('keep');
      });

      it('with recursive, removes a tree without following the links inside it', async () => {
        await fs.mkdir(at('outside'));
        await fs.writeFile(at('outside/keep'), bytes('keep'));
        await fs.mkdir(at('tree/sub'), { recursive: true });
        await fs.writeFile(at('tree/sub/f'), bytes('x'));
        await h.makeSymlink(at('outside'), at('tree/sub/link'));

        await fs.rm(at('tree'), { recursive: true });

        expect(await fs.lstat(at('tree'))).toBeNull();
        expect(await read('outside/keep')).toBe('keep');
      });

      it('without recursive, removes an empty directory and refuses a non-empty one (ENOTEMPTY)', async () => {
        await fs.mkdir(at('empty'));
        await fs.mkdir(at('full'));
        await fs.writeFile(at('full/f'), bytes('x'));

        await fs.rm(at('empty'));
        await expect(fs.rm(at('full'))).rejects.toMatchObject({ code: 'ENOTEMPTY' });

        expect(await names()).toEqual(['full']);
        expect(await read('full/f')).toBe('x');
      });
    });

    describe('rename', () => {
      it('moves a file, replacing a file at the destination', async () => {
        await fs.writeFile(at('a'), bytes('a'));
        await fs.writeFile(at('b'), bytes('b'));
        await fs.rename(at('a'), at('b'));
        expect(await names()).toEqual(['b']);
        expect(await read('b')).toBe('a');
      });

      it('moves a link as a link, leaving its target alone', async () => {
        await fs.writeFile(at('target'), bytes('t'));
        await h.makeSymlink(at('target'), at('link'));
        await fs.rename(at('link'), at('moved'));
        expect((await fs.lstat(at('moved')))?.type).toBe('symlink');
        expect(await fs.lstat(at('link'))).toBeNull();
        expect(await read('target')).toBe('t');
      });

      it('moves a directory with its contents', async () => {
        await fs.mkdir(at('d'));
        await fs.writeFile(at('d/f'), bytes('x'));
        await fs.rename(at('d'), at('e'));
        expect(await names()).toEqual(['e']);
        expect(await read('e/f')).toBe('x');
      });

      it('treats a rename onto itself as done, and refuses to move a directory into itself (EINVAL)', async () => {
        await fs.mkdir(at('d/sub'), { recursive: true });
        await fs.writeFile(at('f'), bytes('x'));
        await fs.rename(at('f'), at('f'));
        await fs.rename(at('d'), at('d'));
        await expect(fs.rename(at('d'), at('d/sub/inner'))).rejects.toMatchObject({ code: 'EINVAL' });
        expect(await names()).toEqual(['d', 'f']);
        expect(await names('d')).toEqual(['sub']);
        expect(await read('f')).toBe('x');
      });

      it('fails with ENOENT for an absent source, EISDIR for a file onto a directory, ENOTEMPTY onto a full one', async () => {
        await fs.writeFile(at('f'), bytes('x'));
        await fs.mkdir(at('d'));
        await fs.mkdir(at('full'));
        await fs.writeFile(at('full/keep'), bytes('keep'));

        await expect(fs.rename(at('absent'), at('x'))).rejects.toMatchObject({ code: 'ENOENT' });
        await expect(fs.rename(at('f'), at('d'))).rejects.toMatchObject({ code: 'EISDIR' });
        // POSIX allows EEXIST here too; Linux and macOS say ENOTEMPTY.
        await expect(fs.rename(at('d'), at('full'))).rejects.toMatchObject({ code: expect.stringMatching(/^(ENOTEMPTY|EEXIST)$/) });
        expect(await read('full/keep')).toBe('keep');
      });
    });

    describe('openDir', () => {
      it('opens a folder; its children are reached through the handle and its identity is the folder\'s', async () => {
        await fs.mkdir(at('d'));
        await fs.writeFile(at('d/f'), bytes('inside'));
        const handle = await fs.openDir(at('d'));
        try {
          const stat = await fs.lstat(at('d'));
          expect({ dev: handle.dev, ino: handle.ino }).toEqual({ dev: stat!.dev, ino: stat!.ino });
          expect(text(await fs.readFile(`${handle.path}/f`))).toBe('inside');
        } finally {
          await handle.close();
        }
      });

      it('refuses a link to a folder (ELOOP), a file (ENOTDIR) and nothing (ENOENT)', async () => {
        await fs.mkdir(at('d'));
        await fs.writeFile(at('f'), bytes('x'));
        await h.makeSymlink(at('d'), at('link'));
        await expect(fs.openDir(at('link'))).rejects.toMatchObject({ code: 'ELOOP' });
        await expect(fs.openDir(at('f'))).rejects.toMatchObject({ code: 'ENOTDIR' });
        await expect(fs.openDir(at('absent'))).rejects.toMatchObject({ code: 'ENOENT' });
      });

      it('a pinned handle keeps reaching the opened folder after its name is swapped for a link', async () => {
        await fs.mkdir(at('d'));
        await fs.mkdir(at('elsewhere'));
        const handle = await fs.openDir(at('d'));
        try {
          await fs.rename(at('d'), at('moved'));
          await h.makeSymlink(at('elsewhere'), at('d'));
          if (handle.pinned) {
            await fs.writeFile(`${handle.path}/written`, bytes('w'));
            expect(await names('moved')).toEqual(['written']);
            expect(await names('elsewhere')).toEqual([]);
          } else {
            // Unpinned: the path is the name, and the caller must verify the identity, which changed.
            const now = await fs.lstat(handle.path);
            expect(now?.ino === handle.ino && now?.dev === handle.dev).toBe(false);
          }
        } finally {
          await handle.close();
        }
      });
    });

    describe('openFile', () => {
      it('gives the opened file\'s stat, then reads at most the bytes asked for', async () => {
        await fs.writeFile(at('f'), bytes('0123456789'));
        const file = await fs.openFile(at('f'));
        try {
          expect(file.stat).toMatchObject({ type: 'file', size: 10, nlink: 1 });
          expect(text(await file.read(4))).toBe('0123');
          expect(text(await file.read(100))).toBe('0123456789');
        } finally {
          await file.close();
        }
      });

      it('refuses a link (ELOOP) and nothing there (ENOENT); a folder is opened or refused, never read as a file', async () => {
        await fs.writeFile(at('f'), bytes('x'));
        await fs.mkdir(at('d'));
        await h.makeSymlink(at('f'), at('link'));
        await expect(fs.openFile(at('link'))).rejects.toMatchObject({ code: 'ELOOP' });
        await expect(fs.openFile(at('absent'))).rejects.toMatchObject({ code: 'ENOENT' });
        const dir = await fs.openFile(at('d')).catch((err: NodeJS.ErrnoException) => err.code ?? 'no code');
        if (typeof dir === 'string') expect(dir).toBe('EISDIR');
        else {
          expect(dir.stat.type).toBe('directory');
          await dir.close();
        }
      });

      it('counts hard links', async () => {
        await fs.writeFile(at('f'), bytes('x'));
        if (!h.makeHardLink) return;
        await h.makeHardLink(at('f'), at('g'));
        const file = await fs.openFile(at('g'));
        try {
          expect(file.stat.nlink).toBe(2);
        } finally {
          await file.close();
        }
      });
    });

    // Optional in the interface; both implementations here have it.
    describe('readLinkSync', () => {
      it("gives a link's target as written, absolute or relative, dangling too, without following it", async () => {
        const readLink = fs.readLinkSync!.bind(fs);
        await fs.mkdir(at('d'));
        await h.makeSymlink(at('d'), at('abs'));
        await h.makeSymlink('../d/x', at('d/rel'));
        await h.makeSymlink(at('nowhere'), at('dangling'));
        expect(readLink(at('abs'))).toBe(at('d'));
        expect(readLink(at('d/rel'))).toBe('../d/x');
        expect(readLink(at('dangling'))).toBe(at('nowhere'));
      });

      it('is null for a file, a directory, nothing there, or a path under a file', async () => {
        const readLink = fs.readLinkSync!.bind(fs);
        await fs.writeFile(at('f'), bytes('x'));
        await fs.mkdir(at('d'));
        expect(readLink(at('f'))).toBeNull();
        expect(readLink(at('d'))).toBeNull();
        expect(readLink(at('absent'))).toBeNull();
        expect(readLink(at('absent/deeper'))).toBeNull();
        expect(readLink(at('f/child'))).toBeNull();
      });
    });
  });
}
