import { appendFile, mkdtemp, realpath, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InMemoryStoreClient, MemfsFileSystem } from '@memory-mounter/testing';
import { NodeFileSystem, sha256Hex, type FileStat, type FileSystem } from '@memory-mounter/core';
import { applyPlan, scanStore, StoreFolder, type ApplyIO, type Outcome, type Transfer } from '@memory-mounter/core/engine';
import { writeMarker } from '../src/local/marker.js';
import { MARKER_FILE } from '../src/model/limits.js';
import { DISKS, RecordingLogger } from './harness.js';

/**
 * `inner`, with `act` run after each `lstat` and before its answer is returned: the agent acting
 * at the very instant after one of the engine's checks.
 */
function afterEachLstat(inner: FileSystem, act: (path: string, answer: FileStat | null) => Promise<void>): FileSystem {
  return new Proxy(inner, {
    get: (target, key) => {
      const value = Reflect.get(target, key) as unknown;
      if (typeof value !== 'function') return value;
      if (key !== 'lstat') return value.bind(target);
      return async (path: string) => {
        const answer = await target.lstat(path);
        await act(path, answer);
        return answer;
      };
    },
  });
}

/**
 * The executor on its own: it performs transfers and says what became of each, and writes no
 * engine state (there is none to give it). One real store folder per test, on memfs and on a
 * real temp dir.
 */
const STORE = 'memstore_apply';
const MARKER = `/${MARKER_FILE}`;
const sha = (text: string) => sha256Hex(new TextEncoder().encode(text));

describe.each(DISKS)('applyPlan on %s', (kind) => {
  let fs: FileSystem;
  let dir: string;
  let base: string | undefined;
  let folder: StoreFolder;
  let client: InMemoryStoreClient;
  let io: ApplyIO;

  beforeEach(async () => {
    if (kind === 'memfs') {
      fs = new MemfsFileSystem({ '/host/store': null });
      dir = '/host/store';
    } else {
      base = await realpath(await mkdtemp(join(tmpdir(), 'mm-apply-')));
      dir = join(base, 'store');
      fs = new NodeFileSystem();
      await fs.mkdir(dir, { recursive: true });
    }
    folder = await StoreFolder.open(fs, dir);
    await writeMarker(folder, STORE);
    client = new InMemoryStoreClient();
    io = { folder, client, memoryStoreId: STORE, logger: new RecordingLogger(), signal: new AbortController().signal, concurrency: 4 };
  });
  afterEach(async () => {
    await folder.close();
    if (base) await rm(base, { recursive: true, force: true });
  });

  const read = async (path: string) => {
    try {
      return new TextDecoder().decode(await fs.readFile(`${dir}${path}`));
    } catch {
      return null;
    }
  };
  const apply = async (transfers: Transfer[]): Promise<Outcome[]> => applyPlan(io, transfers);
  /** An in-place append, as a shell's `>>` does: same inode, new size and ctime. */
  const appendTo = async (path: string, text: string) => {
    if (kind === 'memfs') {
      (fs as MemfsFileSystem).vol.appendFileSync(path, text);
      return;
    }
    await appendFile(path, text);
  };

  it('rename_local moves the file without fetching, then runs its follow-up at the new path; a changed file is not moved', async () => {
    const [memory] = client.seed(STORE, { '/b/a.md': 'alpha' });
    await folder.write('/a.md', new TextEncoder().encode('alpha, edited'));
    const before = client.requests.length;
    const rename: Transfer = {
      type: 'rename_local',
      path: '/b/a.md',
      from: '/a.md',
      memoryId: memory!.id,
      expectLocal: sha('alpha, edited'),
      baseSha: sha('alpha'),
      then: { type: 'update', path: '/b/a.md', localSha: sha('alpha, edited'), memoryId: memory!.id, expectedRemoteSha: sha('alpha') },
    };
    const [outcome] = await apply([rename]);
    expect(outcome!.result).toEqual({ kind: 'done', sha: sha('alpha') });
    expect(outcome!.then?.result).toEqual({ kind: 'done', sha: sha('alpha, edited') });
    expect(client.requests.slice(before).map((r) => r.op)).toEqual(['update']);
    expect(await read('/b/a.md')).toBe('alpha, edited');
    expect(await read('/a.md')).toBeNull();
    expect(client.snapshot(STORE)).toEqual({ '/b/a.md': 'alpha, edited' });
    // Planned for other content: left where it is, the follow-up never runs.
    await folder.write('/c.md', new TextEncoder().encode('changed'));
    const [stale] = await apply([{ type: 'rename_local', path: '/d.md', from: '/c.md', memoryId: memory!.id, expectLocal: sha('as planned'), baseSha: sha('as planned') }]);
    expect(stale!.result).toMatchObject({ kind: 'skipped', code: 'changed_during_sync' });
    expect(await read('/c.md')).toBe('changed');
  });

  it('rename_remote updates the path guarded by the sha; a file back at the old path, or a changed memory, stops it', async () => {
    const [memory] = client.seed(STORE, { '/a.md': 'alpha' });
    await folder.write('/b.md', new TextEncoder().encode('alpha'));
    await folder.write('/a.md', new TextEncoder().encode('alpha'));
    const rename: Transfer = { type: 'rename_remote', path: '/b.md', from: '/a.md', memoryId: memory!.id, sha: sha('alpha') };
    expect((await apply([rename]))[0]!.result).toMatchObject({ kind: 'skipped', code: 'reappeared' });
    await folder.unlink('/a.md');
    client.writeMemory(STORE, '/a.md', 'alpha, edited remotely');
    expect((await apply([rename]))[0]!.result).toMatchObject({ kind: 'failed', error: 'precondition_failed' });
    client.writeMemory(STORE, '/a.md', 'alpha');
    const [done] = await apply([rename]);
    expect(done!.result).toEqual({ kind: 'done', sha: sha('alpha') });
    expect(client.memories(STORE).map((m) => [m.id, m.path])).toEqual([[memory!.id, '/b.md']]);
  });

  it('delete_local to corroborate: the store is asked first; a memory found (here or renamed) keeps the file, only not_found deletes it', async () => {
    const [kept, renamed, gone] = client.seed(STORE, { '/kept.md': 'kept', '/renamed.md': 'renamed', '/gone.md': 'gone' });
    for (const name of ['kept', 'renamed', 'gone']) await folder.write(`/${name}.md`, new TextEncoder().encode(name));
    client.renameMemory(STORE, '/renamed.md', '/elsewhere/renamed.md');
    client.deleteMemory(STORE, '/gone.md');
    const ask = (path: string, memoryId: string): Transfer => ({ type: 'delete_local', path, expectLocal: sha(path.slice(1, -3)), corroborate: { memoryId } });
    const before = client.requests.length;
    const outcomes = await apply([ask('/kept.md', kept!.id), ask('/renamed.md', renamed!.id), ask('/gone.md', gone!.id)]);
    expect(client.requests.slice(before).map((r) => `${r.op} ${r.memoryId}`)).toEqual([`get ${kept!.id}`, `get ${renamed!.id}`, `get ${gone!.id}`]);
    expect(outcomes.map((o) => o.result)).toEqual([
      { kind: 'skipped', code: 'absence_unconfirmed', detail: expect.stringContaining('the store still holds it') },
      { kind: 'skipped', code: 'absence_unconfirmed', detail: expect.stringContaining('at /elsewhere/renamed.md (renamed)') },
      { kind: 'done' },
    ]);
    expect(await read('/kept.md')).toBe('kept');
    expect(await read('/renamed.md')).toBe('renamed');
    expect(await read('/gone.md')).toBeNull();
    // What the store answered goes to the remote view: the memories found, where they are; the
    // deletion as one (the listing and the answer agree: no `notFound` doubt).
    expect(outcomes[0]!.learned).toEqual([{ kind: 'memory', memory: expect.objectContaining({ id: kept!.id, path: '/kept.md' }), fetched: true }]);
    expect(outcomes[1]!.learned).toEqual([{ kind: 'memory', memory: expect.objectContaining({ id: renamed!.id, path: '/elsewhere/renamed.md' }), fetched: true }]);
    expect(outcomes[2]!.learned).toEqual([{ kind: 'deleted', memoryId: gone!.id }]);
  });

  it('delete_local to corroborate: a get that fails deletes nothing, and the file changed meanwhile is not deleted either', async () => {
    const [memory] = client.seed(STORE, { '/a.md': 'alpha' });
    await folder.write('/a.md', new TextEncoder().encode('alpha'));
    client.deleteMemory(STORE, '/a.md');
    client.failNext('get', 'unavailable');
    const action: Transfer = { type: 'delete_local', path: '/a.md', expectLocal: sha('alpha'), corroborate: { memoryId: memory!.id } };
    const [failed] = await apply([action]);
    expect(failed!.result).toMatchObject({ kind: 'failed', error: 'unavailable' });
    expect(failed!.learned).toEqual([]);
    expect(await read('/a.md')).toBe('alpha');
    // Confirmed gone, but the agent edited the file while the store was asked: the edit stays.
    await folder.write('/a.md', new TextEncoder().encode('alpha, edited'));
    const [changed] = await apply([action]);
    expect(changed!.result).toMatchObject({ kind: 'skipped', code: 'changed_during_sync' });
    expect(await read('/a.md')).toBe('alpha, edited');
  });

  it('returns one outcome per transfer, in the order given', async () => {
    const [memory] = client.seed(STORE, { '/a.md': 'alpha' });
    const transfers: Transfer[] = [
      { type: 'pull', path: '/a.md', memoryId: memory!.id, remoteSha: memory!.content_sha256, expectLocal: null, reason: 'new_remote' },
      { type: 'delete_local', path: '/absent.md', expectLocal: sha('x') },
    ];
    const outcomes = await apply(transfers);
    expect(outcomes.map((o) => o.action)).toEqual(transfers);
    expect(outcomes.map((o) => o.result.kind)).toEqual(['done', 'skipped']);
  });

  it('starts the transfers folder by folder in turn, and still returns the outcomes in the order given', async () => {
    // One slot: the start order is the order the files are written in.
    const written: string[] = [];
    const recording = new Proxy(fs, {
      get: (target, key) => {
        const value = Reflect.get(target, key) as unknown;
        const writes = key === 'writeFile' || key === 'writeFileExclusive';
        if (!writes || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value;
        return (path: string, ...rest: unknown[]) => {
          written.push(path);
          return (value as (...args: unknown[]) => Promise<void>).call(target, path, ...rest);
        };
      },
    });
    const spread = await StoreFolder.open(recording, dir);
    try {
      const paths = ['/a/1.md', '/a/2.md', '/b/1.md', '/b/2.md'];
      const transfers: Transfer[] = paths.map((path) => ({
        type: 'pull',
        path,
        memoryId: `mem_${path}`,
        remoteSha: sha(path),
        expectLocal: null,
        reason: 'new_remote',
        content: path,
      }));
      const outcomes = await applyPlan({ ...io, folder: spread, concurrency: 1 }, transfers);
      // On the real disk a folder is reached through its handle's path: told apart by that.
      const parent = (path: string) => path.slice(0, path.lastIndexOf('/'));
      expect(written.map((path) => path.slice(path.lastIndexOf('/')))).toEqual(['/1.md', '/1.md', '/2.md', '/2.md']);
      expect(parent(written[0]!)).not.toBe(parent(written[1]!));
      expect(written.slice(2).map(parent)).toEqual(written.slice(0, 2).map(parent));
      // Each outcome names its transfer; a pull done no longer holds its content (TransferStream).
      expect(outcomes.map((o) => o.action)).toEqual(paths.map((path) => ({ type: 'pull', path, memoryId: `mem_${path}`, remoteSha: sha(path), expectLocal: null, reason: 'new_remote' })));
      expect(outcomes.map((o) => o.result)).toEqual(paths.map((path) => ({ kind: 'done', sha: sha(path) })));
    } finally {
      await spread.close();
    }
  });

  it('keeps no more than `concurrency` transfers waiting for a slot or holding one: the rest are only entries in their folder\'s queue', async () => {
    // A pool's slot as the session's would give it, a moment later: every transfer asking for one is counted.
    let asking = 0;
    let most = 0;
    const slots = {
      runExclusive: async <T>(work: () => Promise<T> | T): Promise<T> => {
        most = Math.max(most, ++asking);
        try {
          await new Promise((resolve) => setImmediate(resolve));
          return await work();
        } finally {
          asking--;
        }
      },
    };
    const paths = Array.from({ length: 60 }, (_, i) => `/f${i % 6}/n${i}.md`);
    const transfers: Transfer[] = paths.map((path) => ({ type: 'pull', path, memoryId: `mem_${path}`, remoteSha: sha(path), expectLocal: null, reason: 'new_remote', content: path }));
    const outcomes = await applyPlan({ ...io, slots, concurrency: 4 }, transfers);
    expect(most).toBe(4);
    expect(outcomes.map((o) => o.result.kind)).toEqual(paths.map(() => 'done'));
    expect(new TextDecoder().decode(await fs.readFile(`${dir}/f5/n59.md`))).toBe('/f5/n59.md');
  });

  it('a pull of a new memory never writes over a file the agent made at its place after the check', async () => {
    // The agent's file appears the instant after the write's absence check: the lstat that
    // finds nothing at the place plants it before answering.
    let planted = false;
    const raced = await StoreFolder.open(
      afterEachLstat(fs, async (path, answer) => {
        if (answer !== null || planted || !path.endsWith('/new.md')) return;
        planted = true;
        await fs.writeFile(path, new TextEncoder().encode("the agent's"));
      }),
      dir,
    );
    try {
      const [outcome] = await applyPlan({ ...io, folder: raced }, [
        { type: 'pull', path: '/sub/new.md', memoryId: 'mem_new', remoteSha: sha('remote'), expectLocal: null, reason: 'new_remote', content: 'remote' },
      ]);
      expect(planted).toBe(true);
      expect(outcome!.result).toMatchObject({ kind: 'skipped', code: 'taken' });
      expect(await read('/sub/new.md')).toBe("the agent's");
    } finally {
      await raced.close();
    }
  });

  it('a pull replaces a file only while it is the very file read: an edit made after the write began is kept', async () => {
    await folder.write('/sub/a.md', new TextEncoder().encode('old'));
    // The agent edits the file in place right after the write's own look at it: the file is
    // still as read at that look, and no longer when the new content is ready to take its name.
    let edits = 0;
    const raced = await StoreFolder.open(
      afterEachLstat(fs, async (path, answer) => {
        if (answer?.type !== 'file' || !path.endsWith('/a.md') || edits++ > 0) return;
        await new Promise((resolve) => setTimeout(resolve, 15)); // a later clock tick for ctime
        await appendTo(path, ", the agent's edit");
      }),
      dir,
    );
    try {
      const [outcome] = await applyPlan({ ...io, folder: raced }, [
        { type: 'pull', path: '/sub/a.md', memoryId: 'mem_a', remoteSha: sha('remote'), expectLocal: sha('old'), reason: 'remote_changed', content: 'remote' },
      ]);
      expect(edits).toBeGreaterThan(1);
      expect(outcome!.result).toMatchObject({ kind: 'skipped', code: 'changed_during_sync' });
      expect(await read('/sub/a.md')).toBe("old, the agent's edit");
    } finally {
      await raced.close();
    }
  });

  it('a pull that carries its content writes it without fetching the memory', async () => {
    const [memory] = client.seed(STORE, { '/a.md': 'alpha' });
    const before = client.count('get');
    const [outcome] = await apply([
      { type: 'pull', path: '/a.md', memoryId: memory!.id, remoteSha: sha('alpha'), expectLocal: null, reason: 'new_remote', content: 'alpha' },
    ]);
    expect(outcome!.result).toEqual({ kind: 'done', sha: sha('alpha') });
    expect(client.count('get')).toBe(before);
    expect(await read('/a.md')).toBe('alpha');
  });

  it('a pull whose carried content does not match its sha fails as rejected, and writes nothing', async () => {
    const [outcome] = await apply([
      { type: 'pull', path: '/a.md', memoryId: 'mem_x', remoteSha: sha('alpha'), expectLocal: null, reason: 'new_remote', content: 'tampered' },
    ]);
    expect(outcome!.result).toMatchObject({ kind: 'failed', error: 'rejected' });
    expect(await read('/a.md')).toBeNull();
  });

  it('a pull over a file that appeared since the scan is skipped, and the file kept', async () => {
    await fs.writeFile(`${dir}/a.md`, new TextEncoder().encode('agent wrote this'));
    const [outcome] = await apply([
      { type: 'pull', path: '/a.md', memoryId: 'mem_x', remoteSha: sha('alpha'), expectLocal: null, reason: 'new_remote', content: 'alpha' },
    ]);
    expect(outcome!.result).toMatchObject({ kind: 'skipped', code: 'changed_during_sync' });
    expect(await read('/a.md')).toBe('agent wrote this');
  });

  it('an update of a memory deleted in the store re-creates it, and says what it learned', async () => {
    await fs.writeFile(`${dir}/a.md`, new TextEncoder().encode('edited'));
    const [outcome] = await apply([{ type: 'update', path: '/a.md', localSha: sha('edited'), memoryId: 'mem_gone', expectedRemoteSha: sha('old') }]);
    expect(outcome!.result).toEqual({ kind: 'done', sha: sha('edited') });
    expect(outcome!.learned.map((c) => c.kind)).toEqual(['deleted', 'memory']);
    expect(client.snapshot(STORE)).toEqual({ '/a.md': 'edited' });
  });

  it('a create the store fails is a failed outcome with the StoreError kind, never a throw', async () => {
    await fs.writeFile(`${dir}/n.md`, new TextEncoder().encode('new'));
    client.failNext('create', 'rejected');
    const [outcome] = await apply([{ type: 'create', path: '/n.md', localSha: sha('new'), reason: 'new_local' }]);
    expect(outcome!.result).toMatchObject({ kind: 'failed', error: 'rejected', cutOff: false });
  });

  it('a remote delete whose file came back is skipped (reappeared), and nothing is sent', async () => {
    const [memory] = client.seed(STORE, { '/a.md': 'alpha' });
    await fs.writeFile(`${dir}/a.md`, new TextEncoder().encode('alpha'));
    const [outcome] = await apply([{ type: 'delete_remote', path: '/a.md', memoryId: memory!.id, expectedRemoteSha: sha('alpha'), mode: 'send' }]);
    expect(outcome!.result).toMatchObject({ kind: 'skipped', code: 'reappeared' });
    expect(client.snapshot(STORE)).toEqual({ '/a.md': 'alpha' });
  });

  it('log_only: the checks run, nothing is sent, and the outcome says so', async () => {
    const [memory] = client.seed(STORE, { '/a.md': 'alpha' });
    const [outcome] = await apply([{ type: 'delete_remote', path: '/a.md', memoryId: memory!.id, expectedRemoteSha: sha('alpha'), mode: 'log_only' }]);
    expect(outcome!.result).toEqual({ kind: 'done', sent: false });
    expect(client.count('delete')).toBe(0);
  });

  it('after the time bound, nothing starts: every transfer is cut off', async () => {
    const stop = new AbortController();
    stop.abort(new Error('syncTimeout ran out'));
    io = { ...io, signal: stop.signal };
    await fs.writeFile(`${dir}/n.md`, new TextEncoder().encode('new'));
    const outcomes = await apply([
      { type: 'create', path: '/n.md', localSha: sha('new'), reason: 'new_local' },
      { type: 'delete_local', path: '/n.md', expectLocal: sha('new') },
    ]);
    expect(outcomes.map((o) => o.result)).toEqual([{ kind: 'cut_off' }, { kind: 'cut_off' }]);
    expect(client.count('create')).toBe(0);
    expect(await read('/n.md')).toBe('new');
  });

  describe('a push with the content its scan carried', () => {
    /** Opens of files for reading, from now on: the push's own re-read is one of them. */
    function countOpens(): { opens: number } {
      const counter = { opens: 0 };
      const openFile = fs.openFile.bind(fs);
      fs.openFile = (path) => {
        if (!path.endsWith(MARKER)) counter.opens++;
        return openFile(path);
      };
      return counter;
    }
    /** What a scan of the folder now carries for `path` (its content, sha and fstat). */
    const carriedOf = async (path: string) => {
      const snapshot = await scanStore(folder, STORE, new Map(), { wanted: () => true, budgetBytes: 1 << 20 });
      folder.release();
      return snapshot.carried!;
    };

    it('sends the scanned content of a file not written since, without reading it again', async () => {
      await fs.writeFile(`${dir}/n.md`, new TextEncoder().encode('new'));
      const carried = await carriedOf('/n.md');
      const counter = countOpens();
      io = { ...io, carried };
      const [outcome] = await apply([{ type: 'create', path: '/n.md', localSha: sha('new'), reason: 'new_local' }]);
      expect(outcome!.result).toEqual({ kind: 'done', sha: sha('new') });
      expect(client.snapshot(STORE)).toEqual({ '/n.md': 'new' });
      expect(counter.opens).toBe(0);
    });

    it('a file rewritten since the scan is read again and, with other content, not pushed', async () => {
      await fs.writeFile(`${dir}/n.md`, new TextEncoder().encode('new'));
      io = { ...io, carried: await carriedOf('/n.md') };
      await fs.writeFile(`${dir}/n.md`, new TextEncoder().encode('newer'));
      const [outcome] = await apply([{ type: 'create', path: '/n.md', localSha: sha('new'), reason: 'new_local' }]);
      expect(outcome!.result).toMatchObject({ kind: 'skipped', code: 'changed_during_sync' });
      expect(client.count('create')).toBe(0);
    });

    it('a file rewritten since the scan with the same content is read again and pushed', async () => {
      await fs.writeFile(`${dir}/n.md`, new TextEncoder().encode('new'));
      io = { ...io, carried: await carriedOf('/n.md') };
      await fs.writeFile(`${dir}/n.md`, new TextEncoder().encode('new'));
      const counter = countOpens();
      const [outcome] = await apply([{ type: 'create', path: '/n.md', localSha: sha('new'), reason: 'new_local' }]);
      expect(outcome!.result).toEqual({ kind: 'done', sha: sha('new') });
      expect(counter.opens).toBe(1);
    });

    it('a file removed or swapped for a link since the scan is not pushed', async () => {
      await fs.writeFile(`${dir}/n.md`, new TextEncoder().encode('new'));
      await fs.writeFile(`${dir}/l.md`, new TextEncoder().encode('link me'));
      io = { ...io, carried: await carriedOf('/n.md') };
      await fs.rm(`${dir}/n.md`);
      await fs.rm(`${dir}/l.md`);
      if (kind === 'node') await symlink('/etc/hostname', `${dir}/l.md`);
      const outcomes = await apply([
        { type: 'create', path: '/n.md', localSha: sha('new'), reason: 'new_local' },
        { type: 'create', path: '/l.md', localSha: sha('link me'), reason: 'new_local' },
      ]);
      expect(outcomes.map((o) => o.result.kind)).toEqual(['skipped', 'skipped']);
      expect(client.count('create')).toBe(0);
    });
  });
});
