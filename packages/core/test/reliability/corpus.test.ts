import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  MARKER_FILE,
  MAX_MEMORY_BYTES,
  MemoryMountError,
  NodeFileSystem,
  unpinnedDirHandle,
  type DirEntry,
  type DirHandle,
  type FileSystem,
  type FileStat,
  type OpenFile,
} from '@memory-mounter/core';
import { notesResource, STORE } from '../harness.js';
import { bundleChild } from './child-bundle.js';
import { CorpusHost, SECRET } from './corpus-host.js';

/**
 * The hostile-input corpus (issue 5, part 2), on a real disk. Each case states what must be
 * refused — and checks the report or the warnings name the path and the store — and that nothing
 * outside the mounts was read or written (CorpusHost.expectNothingOutsideTouched).
 */

let h: CorpusHost;
beforeEach(async () => {
  h = await CorpusHost.create();
});
afterEach(() => h.dispose());

const marker = `/${MARKER_FILE}`;
const longPath = `/${Array.from({ length: 11 }, () => 'y'.repeat(95)).join('/')}.md`; // 1,060 bytes
const deepPath = `/${Array.from({ length: 21 }, (_, i) => `s${i}`).join('/')}`; // 21 segments

/** Remote paths the service itself should never hold, planted in the store as if it had. */
const HOSTILE_REMOTE_PATHS: [label: string, path: string, reason: RegExp][] = [
  ['a .. segment', '/../escape.md', /'\.\.' segment/],
  ['.. deeper down', '/a/../../escape.md', /'\.\.' segment/],
  ['absolute after normalisation', '//etc/passwd', /empty segment/],
  ['a . segment', '/./a.md', /'\.' segment/],
  ['no leading slash', 'relative.md', /does not start with \//],
  ['the empty path', '', /is empty/],
  ['NUL', '/nul\0.md', /NUL/],
  ['backslashes', '/..\\..\\escape.md', /backslash/],
  ['a control character (BEL)', '/bell\u0007.md', /control or format/],
  ['a newline', '/line\nbreak.md', /control or format/],
  ['a format character (U+202E RIGHT-TO-LEFT OVERRIDE)', '/invoice\u202egpj.md', /control or format/],
  ['a format character (U+200B ZERO WIDTH SPACE)', '/zero\u200bwidth.md', /control or format/],
  ['U+2028 LINE SEPARATOR', '/line\u2028sep.md', /control or format/],
  ['non-NFC (e + combining acute)', '/cafe\u0301.md', /NFC/],
  ['over 1,024 bytes', longPath, /longer than 1024 bytes/],
  ['over 20 segments', deepPath, /more than 20 segments/],
  ['the marker path', marker, /marker/],
  ['a temp-file name', '/.mm-tmp-0123456789abcdef', /temp file/],
];

describe('hostile remote paths: skipped with a warning, never written, never deleted', () => {
  it.each(HOSTILE_REMOTE_PATHS)('%s', async (_label, path, reason) => {
    h.client.seed(STORE, { '/ok.md': 'fine' });
    h.client.plantMemory(STORE, path, `HOSTILE ${SECRET}`);
    const m = h.mounter();
    await m.materialize([notesResource()]);

    // Materialize: only the marker and the valid memory are on disk; the marker is ours.
    expect([...h.mountTree().keys()]).toEqual([marker, '/ok.md']);
    expect(h.disk.names(h.memoryRoot)).toEqual(['notes']);
    expect(JSON.parse(new TextDecoder().decode(h.disk.readFile(`${h.dir}${marker}`)!))).toEqual({ memory_store_id: STORE });

    // Every pass reports it, warns once, and deletes nothing. (A path that is in no folder, like
    // one without its leading `/`, is not met by the download's folder-by-folder listing: the
    // first pass meets it in the change feed and warns then.)
    h.clock.now += 3_600_000;
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(report.skippedPaths).toContainEqual({ path, code: 'remote_bad_path', reason: expect.stringMatching(reason) });
    expect(h.warningsFor(path).map((w) => w.msg)).toEqual([expect.stringMatching(reason)]);
    expect([...h.mountTree().keys()]).toEqual([marker, '/ok.md']);

    const final = await m.finalize({ outcome: 'completed' });
    expect(final.removed).toEqual([h.dir]);
    expect(h.client.snapshot(STORE)[path]).toBe(`HOSTILE ${SECRET}`);
    expect(h.client.count('delete') + h.client.count('update') + h.client.count('create')).toBe(0);
    expect(h.disk.names(h.memoryRoot)).toEqual([]);
    // The hostile memory itself carries the secret on purpose; nothing else may.
    h.client.deleteMemory(STORE, path);
    h.expectNothingOutsideTouched();
  });
});

describe('hostile remote paths met by a re-download', () => {
  // B4 (found here, fixed): a pass that re-downloads a wiped folder skipped the hostile memory
  // correctly but said so only in the log; its report's skippedPaths must name it like any pass.
  it('B4: the re-download pass names the hostile path it skipped in its report', async () => {
    h.client.seed(STORE, { '/a.md': 'alpha', '/b.md': 'beta', '/..\\escape.md': 'HOSTILE' });
    const m = h.mounter();
    await m.materialize([notesResource()]);
    h.disk.remove(`${h.dir}/a.md`);
    h.disk.remove(`${h.dir}/b.md`);
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(report.status).toBe('redownloaded');
    expect([...h.mountTree().keys()]).toEqual([marker, '/a.md', '/b.md']);
    expect(report.skippedPaths).toContainEqual({ path: '/..\\escape.md', code: 'remote_bad_path', reason: expect.stringMatching(/backslash/) });
  });
});

describe('paths that differ only in case', () => {
  it('on a case-sensitive disk both are kept, each with its own content, and sync separately', async () => {
    h.client.seed(STORE, { '/Notes.md': 'upper', '/notes.md': 'lower' });
    const m = h.mounter();
    await m.materialize([notesResource()]);
    expect(new TextDecoder().decode(h.disk.readFile(`${h.dir}/Notes.md`)!)).toBe('upper');
    expect(new TextDecoder().decode(h.disk.readFile(`${h.dir}/notes.md`)!)).toBe('lower');
    h.disk.writeFile(`${h.dir}/notes.md`, 'lower, edited');
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(report.pushed).toEqual(['/notes.md']);
    expect(h.client.snapshot(STORE)).toEqual({ '/Notes.md': 'upper', '/notes.md': 'lower, edited' });
    await m.finalize();
    h.expectNothingOutsideTouched();
  });

  // A case-insensitive disk (macOS's default) simulated on Linux: every name below memoryRoot is
  // folded to lower case, so /Notes.md and /notes.md are one file.
  const collide = async () => {
    h.client.seed(STORE, { '/Notes.md': 'upper', '/notes.md': 'lower', '/other.md': 'other' });
    const m = h.mounter({ fileSystem: h.fileSystem(new CaseFoldingFileSystem(new NodeFileSystem(), h.memoryRoot)) });
    await m.materialize([notesResource()]);
    return m;
  };

  // B2 (found here, fixed in 94916eb; see docs/reliability.md). Before the fix, materialize
  // downloaded both twins at once into the one file (the last rename won), both entered the
  // baseline, and nothing was warned: the next pass could push /Notes.md's content over the
  // store's /notes.md, and deleting the one file deleted both memories.
  it('B2: where they collide, one is written, the other warned, and the store is never cross-written', async () => {
    const m = await collide();
    const onDisk = new TextDecoder().decode(h.disk.readFile(`${h.dir}/notes.md`)!);
    const unseen = onDisk === 'upper' ? '/notes.md' : '/Notes.md';
    expect(h.warningsFor(unseen).map((w) => w.msg)).toEqual([expect.stringMatching(/case|place on disk is taken/)]);
    for (let i = 0; i < 3; i++) {
      h.clock.now += 3_600_000;
      await m.reconcile({ force: true });
    }
    await m.finalize({ outcome: 'completed' });
    expect(h.client.snapshot(STORE)).toEqual({ '/Notes.md': 'upper', '/notes.md': 'lower', '/other.md': 'other' });
    expect(h.client.count('delete') + h.client.count('update') + h.client.count('create')).toBe(0);
  });

  it('B2: where they collide, deleting the one file deletes only the memory it held', async () => {
    const m = await collide();
    const onDisk = new TextDecoder().decode(h.disk.readFile(`${h.dir}/notes.md`)!);
    const [seen, unseen] = onDisk === 'upper' ? ['/Notes.md', '/notes.md'] : ['/notes.md', '/Notes.md'];
    h.disk.remove(`${h.dir}/notes.md`);
    h.clock.now += 3_600_000;
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(report.deletedRemote).toEqual([seen]);
    expect(Object.keys(h.client.snapshot(STORE)).sort()).toEqual(['/other.md', unseen].sort());
  });
});

describe('local symlinks to the host', () => {
  it('a link to a host file is never read nor uploaded, and a memory at its path is never written through it', async () => {
    h.client.seed(STORE, { '/a.md': 'alpha' });
    const m = h.mounter();
    await m.materialize([notesResource()]);
    h.disk.symlink(`${h.outside}/secret.txt`, `${h.dir}/leak.md`);
    const first = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(first.skippedPaths).toContainEqual({ path: '/leak.md', code: 'is_symlink', reason: 'is a symlink' });
    expect(h.warningsFor('/leak.md')).toHaveLength(1);

    h.client.writeMemory(STORE, '/leak.md', 'written through the link?');
    const second = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(second.skippedPaths).toContainEqual({ path: '/leak.md', code: 'is_symlink', reason: 'is a symlink' });
    expect(h.disk.kindOf(`${h.dir}/leak.md`)).toBe('symlink');
    await m.finalize();
    expect(h.client.snapshot(STORE)['/leak.md']).toBe('written through the link?');
    h.expectNothingOutsideTouched();
  });

  it('a link to a host folder is never entered, and memories under it are never written through it', async () => {
    h.client.seed(STORE, { '/a.md': 'alpha' });
    const m = h.mounter();
    await m.materialize([notesResource()]);
    h.disk.symlink(`${h.outside}/dir`, `${h.dir}/linked`);
    h.client.writeMemory(STORE, '/linked/secret.txt', 'overwrite the host file?');
    h.client.writeMemory(STORE, '/linked/new.md', 'plant a host file?');
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(report.skippedPaths).toContainEqual({ path: '/linked', code: 'is_symlink', reason: 'is a symlink' });
    expect(report.skippedPaths.map((s) => s.path)).toEqual(expect.arrayContaining(['/linked/secret.txt', '/linked/new.md']));
    await m.finalize();
    h.expectNothingOutsideTouched();
  });

  it('a memory file replaced by a link is not taken as deleted, whatever the grace', async () => {
    h.client.seed(STORE, { '/a.md': 'alpha', '/b.md': 'beta' });
    const m = h.mounter();
    await m.materialize([notesResource()]);
    h.disk.remove(`${h.dir}/a.md`);
    h.disk.symlink(`${h.outside}/secret.txt`, `${h.dir}/a.md`);
    h.clock.now += 3_600_000;
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(report.skippedPaths).toContainEqual({ path: '/a.md', code: 'is_symlink', reason: 'is a symlink' });
    await m.finalize({ outcome: 'completed' });
    expect(h.client.count('delete')).toBe(0);
    expect(h.client.snapshot(STORE)).toEqual({ '/a.md': 'alpha', '/b.md': 'beta' });
    h.expectNothingOutsideTouched();
  });
});

describe('special files in a mount', () => {
  it('a FIFO is reported, never opened for a blocking read, never uploaded nor written into', { timeout: 10_000 }, async () => {
    const m = h.mounter();
    await m.materialize([notesResource()]);
    execFileSync('mkfifo', [`${h.dir}/pipe.md`]);
    h.client.writeMemory(STORE, '/pipe.md', 'would block a writer for ever');
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(report.skippedPaths).toContainEqual({ path: '/pipe.md', code: 'not_regular', reason: 'is not a regular file' });
    expect(h.warningsFor('/pipe.md')).toHaveLength(1);
    expect(h.disk.kindOf(`${h.dir}/pipe.md`)).toBe('other');
    await m.finalize();
    expect(h.client.count('create') + h.client.count('update') + h.client.count('delete')).toBe(0);
    h.expectNothingOutsideTouched();
  });

  it('a socket is reported and never uploaded', async () => {
    const m = h.mounter();
    await m.materialize([notesResource()]);
    const server = await listen(`${h.dir}/socket.md`);
    try {
      const report = (await m.reconcile({ force: true }))!.stores[0]!;
      expect(report.skippedPaths).toContainEqual({ path: '/socket.md', code: 'not_regular', reason: 'is not a regular file' });
      expect(h.warningsFor('/socket.md')).toHaveLength(1);
      expect(h.client.count('create')).toBe(0);
    } finally {
      server.close();
    }
    await m.finalize();
    h.expectNothingOutsideTouched();
  });
});

describe('content the store cannot take', () => {
  it('a binary file is refused (not UTF-8), warned once, never uploaded', async () => {
    const m = h.mounter();
    await m.materialize([notesResource()]);
    h.disk.writeFile(`${h.dir}/image.md`, new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0xff, 0x00]));
    const first = (await m.reconcile({ force: true }))!.stores[0]!;
    const second = (await m.reconcile({ force: true }))!.stores[0]!;
    for (const report of [first, second]) expect(report.refused).toContainEqual({ path: '/image.md', code: 'not_utf8', reason: 'is not UTF-8 text' });
    expect(h.warningsFor('/image.md')).toHaveLength(1);
    expect(h.client.count('create')).toBe(0);
    await m.finalize();
    h.expectNothingOutsideTouched();
  });

  it(`a file over ${MAX_MEMORY_BYTES} bytes is refused and never uploaded; one of exactly ${MAX_MEMORY_BYTES} is pushed`, async () => {
    const m = h.mounter();
    await m.materialize([notesResource()]);
    h.disk.writeFile(`${h.dir}/big.md`, 'x'.repeat(MAX_MEMORY_BYTES + 1));
    h.disk.writeFile(`${h.dir}/limit.md`, 'y'.repeat(MAX_MEMORY_BYTES));
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(report.refused).toContainEqual({ path: '/big.md', code: 'too_large', reason: `is larger than ${MAX_MEMORY_BYTES} bytes` });
    expect(report.pushed).toEqual(['/limit.md']);
    expect(h.warningsFor('/big.md')).toHaveLength(1);
    expect(Object.keys(h.client.snapshot(STORE))).toEqual(['/limit.md']);
    await m.finalize();
    h.expectNothingOutsideTouched();
  });
});

describe('a mount path that is a symlink', () => {
  it('before materialize: refused with mount_path_exists, nothing written through it', async () => {
    h.disk.symlink(`${h.outside}/dir`, h.dir);
    h.client.seed(STORE, { '/a.md': 'alpha' });
    const err = await h.mounter().materialize([notesResource()]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MemoryMountError);
    expect(err).toMatchObject({ code: 'mount_path_exists', path: h.dir, memoryStoreId: STORE });
    expect(h.disk.kindOf(h.dir)).toBe('symlink');
    h.expectNothingOutsideTouched();
  });

  it('after materialize: the folder swapped for a link is distrusted, never synced through, left in place', async () => {
    h.client.seed(STORE, { '/a.md': 'alpha' });
    const m = h.mounter();
    await m.materialize([notesResource()]);
    h.disk.rename(h.dir, `${h.memoryRoot}/moved-away`);
    h.disk.symlink(`${h.outside}/dir`, h.dir);
    h.client.writeMemory(STORE, '/secret.txt', 'overwrite the host file?');
    h.client.writeMemory(STORE, '/new.md', 'plant a host file?');
    const report = (await m.reconcile({ force: true }))!.stores[0]!;
    expect(report).toMatchObject({ status: 'skipped', reason: expect.stringMatching(/not trusted.*no longer a directory/) });
    const final = await m.finalize({ outcome: 'completed' });
    expect(final.leftInPlace).toContainEqual({ path: h.dir, reason: expect.stringMatching(/not trusted/) });
    expect(h.disk.kindOf(h.dir)).toBe('symlink');
    expect(h.client.count('create') + h.client.count('update') + h.client.count('delete')).toBe(0);
    h.expectNothingOutsideTouched();
  });
});

describe('memoryRoot the worker cannot use: mount_path_unwritable, with the fix in the message', () => {
  it('memoryRoot is a file', async () => {
    h.disk.remove(h.memoryRoot);
    h.disk.writeFile(h.memoryRoot, 'an operator file');
    const err = await h.mounter().materialize([notesResource()]).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'mount_path_unwritable', path: h.memoryRoot, message: expect.stringMatching(/mkdir -p/) });
    expect(new TextDecoder().decode(h.disk.readFile(h.memoryRoot)!)).toBe('an operator file');
    h.expectNothingOutsideTouched();
  });

  it('memoryRoot is missing: nothing is created in its place', async () => {
    h.disk.remove(h.memoryRoot);
    const err = await h.mounter().materialize([notesResource()]).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'mount_path_unwritable', message: expect.stringMatching(/mkdir -p/) });
    expect(h.disk.kindOf(h.memoryRoot)).toBeNull();
    expect(h.disk.names(h.disk.base)).toEqual(['outside']);
  });

  it('memoryRoot is a symlink to a host folder: refused, nothing written through it', async () => {
    h.disk.remove(h.memoryRoot);
    h.disk.symlink(`${h.outside}/dir`, h.memoryRoot);
    const err = await h.mounter().materialize([notesResource()]).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'mount_path_unwritable', message: expect.stringMatching(/symlink.*mkdir -p/s) });
    h.expectNothingOutsideTouched();
  });
});

// Permission bits do not stop root, so these run the engine in a child process as an
// unprivileged user: `nobody` when the tests run as root, the current user otherwise.
describe('memoryRoot not writable by the worker user (child process)', () => {
  const asRoot = process.getuid?.() === 0;
  const nobody = asRoot ? uidOf('nobody') : null;
  let work: string;
  let bundle: string;
  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'mm-unwritable-'));
    chmodSync(work, 0o755);
    bundle = join(work, 'unwritable-child.cjs');
    await bundleChild(fileURLToPath(new URL('./unwritable-child.ts', import.meta.url)), bundle);
    chmodSync(bundle, 0o644);
  }, 60_000);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  const runChild = (memoryRoot: string) => {
    const result = spawnSync(process.execPath, [bundle, memoryRoot], { encoding: 'utf8', ...(nobody ? { uid: nobody, gid: nobody } : {}) });
    return JSON.parse(result.stdout || JSON.stringify({ ok: false, message: result.stderr })) as Record<string, unknown>;
  };

  it.skipIf(asRoot && nobody === null)('a memoryRoot the worker user cannot write (EACCES)', () => {
    chmodSync(h.disk.base, 0o755);
    chmodSync(h.memoryRoot, asRoot ? 0o755 : 0o555); // root-owned 0755 is read-only to nobody
    const outcome = runChild(h.memoryRoot);
    chmodSync(h.memoryRoot, 0o755);
    expect(outcome).toMatchObject({ ok: false, mountError: true, code: 'mount_path_unwritable', message: expect.stringMatching(/EACCES.*chown/s) });
    expect(h.disk.names(h.memoryRoot)).toEqual([]);
    h.expectNothingOutsideTouched();
  });

  it.skipIf(asRoot && nobody === null)('a memoryRoot the worker user cannot even reach (EACCES on lstat)', () => {
    chmodSync(h.disk.base, 0o700); // untraversable to anyone but its owner
    if (!asRoot) chmodSync(h.disk.base, 0o000);
    const outcome = runChild(h.memoryRoot);
    chmodSync(h.disk.base, 0o755);
    expect(outcome).toMatchObject({ ok: false, mountError: true, code: 'mount_path_unwritable' });
    expect(h.disk.names(h.memoryRoot)).toEqual([]);
    h.expectNothingOutsideTouched();
  });
});

/**
 * A case-insensitive disk: names below `root` are folded to lower case before they reach the
 * real disk, so two names that differ only in case are one file, as on macOS's default volume.
 */
class CaseFoldingFileSystem implements FileSystem {
  constructor(
    private readonly inner: FileSystem,
    private readonly root: string,
  ) {}
  private fold(path: string): string {
    return path.startsWith(`${this.root}/`) ? this.root + path.slice(this.root.length).toLowerCase() : path;
  }
  lstat(path: string): Promise<FileStat | null> {
    return this.inner.lstat(this.fold(path));
  }
  readdir(path: string): Promise<DirEntry[]> {
    return this.inner.readdir(this.fold(path));
  }
  readFile(path: string): Promise<Uint8Array> {
    return this.inner.readFile(this.fold(path));
  }
  writeFile(path: string, data: Uint8Array, opts?: { mode?: number }): Promise<void> {
    return this.inner.writeFile(this.fold(path), data, opts);
  }
  mkdir(path: string, opts?: { mode?: number; recursive?: boolean }): Promise<void> {
    return this.inner.mkdir(this.fold(path), opts);
  }
  rm(path: string, opts?: { recursive?: boolean }): Promise<void> {
    return this.inner.rm(this.fold(path), opts);
  }
  rename(from: string, to: string): Promise<void> {
    return this.inner.rename(this.fold(from), this.fold(to));
  }
  // Unpinned, so that every path the engine passes is a plain one this wrapper can fold.
  openDir(path: string): Promise<DirHandle> {
    return unpinnedDirHandle(this, path);
  }
  openFile(path: string): Promise<OpenFile> {
    return this.inner.openFile(this.fold(path));
  }
}

function listen(path: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(path, () => resolve(server));
  });
}

function uidOf(user: string): number | null {
  try {
    return Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }).trim());
  } catch {
    return null;
  }
}
