import { statSync } from 'node:fs';
import { mkdtemp, readdir, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  fsError,
  MemoryConfigError,
  MemoryMounter,
  NodeFileSystem,
  parseRecord,
  recordFileName,
  STATE_RECORD_FORMAT,
  STATE_RECORD_VERSION,
  type FileSystem,
  type StateRecord,
  type WriteOptions,
} from '@memory-mounter/core';
import { InMemoryStoreClient, MemfsFileSystem } from '@memory-mounter/testing';
import { listRecords, writeRecord } from '../src/recovery/record-file.js';
import { DISKS, type DiskKind } from './harness.js';

/** SPEC 6.3: the crash-recovery record: its name, its format, and that it is written atomically. */

const STATE = '/host/state';
const SHA = (c: string) => c.repeat(64);

function sampleRecord(over: Partial<StateRecord> = {}): StateRecord {
  return {
    format: STATE_RECORD_FORMAT,
    version: STATE_RECORD_VERSION,
    phase: 'mounted',
    mount_id: '0123456789abcdef',
    memory_store_id: 'memstore_x',
    name: 'Notes',
    access: 'read_write',
    mount_path: '/mnt/memory/team/notes',
    host_path: '/host/mnt/memory/team/notes',
    memory_root: '/host/mnt/memory',
    created_folders: ['/host/mnt/memory/team'],
    baseline: { '/a.md': SHA('a'), '/d/c.md': SHA('c') },
    memory_ids: { '/a.md': 'mem_1' },
    unsettled_writes: {},
    pid: 4242,
    hostname: 'worker-1',
    written_at: '2026-01-01T00:00:00.000Z',
    ...over,
  };
}

const bytes = (value: unknown) => new TextEncoder().encode(typeof value === 'string' ? value : JSON.stringify(value));

describe('record file names', () => {
  it('are derived from the host path alone: stable, distinct per folder, and recognisable', () => {
    const a = recordFileName('/host/mnt/memory/notes');
    expect(a).toMatch(/^mm-state-[0-9a-f]{32}\.json$/);
    expect(recordFileName('/host/mnt/memory/notes')).toBe(a);
    expect(recordFileName('/host/mnt/memory/Notes')).not.toBe(a);
    expect(recordFileName('/host/mnt/memory/notes/x')).not.toBe(a);
  });
});

describe('parseRecord', () => {
  it('reads back what was written', () => {
    const record = sampleRecord();
    const parsed = parseRecord(bytes(record), recordFileName(record.host_path));
    expect(parsed).toEqual({ ok: true, record });
  });

  it.each<[string, unknown, RegExp]>([
    ['truncated JSON', '{"format": "memory-mounter/state-rec', /not valid JSON/],
    ['not an object', '[1,2]', /not a JSON object/],
    ['another format', sampleRecord({ format: 'x' as never }), /format/],
    ['a newer version', sampleRecord({ version: 2 as never }), /unsupported version 2/],
    ['a bad phase', sampleRecord({ phase: 'done' as never }), /phase/],
    ['a bad access', sampleRecord({ access: 'rw' as never }), /access/],
    ['a relative memory root', sampleRecord({ memory_root: 'mnt' }), /memory_root/],
    ['a mount path outside /mnt/memory', sampleRecord({ mount_path: '/etc/x' }), /mount_path/],
    ['a host path that is not the mount path under the root', sampleRecord({ host_path: '/etc' }), /host_path/],
    ['a created folder outside the root', sampleRecord({ created_folders: ['/etc'] }), /created_folders/],
    ['a baseline path with ..', sampleRecord({ baseline: { '/../x': SHA('a') } }), /baseline has a path/],
    ['a baseline path naming the marker', sampleRecord({ baseline: { '/.anthropic-memory-store': SHA('a') } }), /marker/],
    ['a baseline value that is no sha', sampleRecord({ baseline: { '/a.md': 'abc' } }), /bad value/],
    ['an unsettled write that is no sha', sampleRecord({ unsettled_writes: { '/a.md': 'zz' } }), /bad value/],
    ['a bad pid', sampleRecord({ pid: -1 }), /pid/],
  ])('refuses %s, with the reason', (_what, value, reason) => {
    const parsed = parseRecord(bytes(value));
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.reason).toMatch(reason);
  });

  it('refuses a record filed under a name its host path does not give', () => {
    const parsed = parseRecord(bytes(sampleRecord()), recordFileName('/host/mnt/memory/other'));
    expect(parsed.ok).toBe(false);
  });

  it('refuses content that is not UTF-8', () => {
    expect(parseRecord(new Uint8Array([0x7b, 0xff, 0x7d])).ok).toBe(false);
  });
});

/** A stateDir on each disk: memfs, and a real temp dir through NodeFileSystem. */
async function stateDirOn(disk: DiskKind): Promise<{ fs: FileSystem; dir: string; names(): Promise<string[]>; mode(name: string): number | null; done(): Promise<void> }> {
  if (disk === 'memfs') {
    const fs = new MemfsFileSystem({ [STATE]: null });
    return {
      fs,
      dir: STATE,
      names: async () => fs.vol.readdirSync(STATE).map(String).sort(),
      mode: (name) => Number(fs.vol.statSync(`${STATE}/${name}`).mode) & 0o777,
      done: async () => {},
    };
  }
  const dir = await realpath(await mkdtemp(join(tmpdir(), 'mm-state-')));
  return {
    fs: new NodeFileSystem(),
    dir,
    names: async () => (await readdir(dir)).sort(),
    mode: (name) => statSync(join(dir, name)).mode & 0o777,
    done: () => rm(dir, { recursive: true, force: true }),
  };
}

/** `fs` with every call of the listed methods written down (the first path, or `from -> to`), then passed on. */
function spying(fs: FileSystem, methods: readonly string[], calls: string[]): FileSystem {
  return new Proxy(fs, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (methods.includes(String(prop))) calls.push(`${String(prop)} ${args.slice(0, prop === 'rename' ? 2 : 1).join(' -> ')}`);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

describe.each(DISKS)('writeRecord on %s', (disk) => {
  it('writes the record with one FileSystem.writeFile (atomic by its contract), 0600, and no temp file of its own', async () => {
    const state = await stateDirOn(disk);
    try {
      const calls: string[] = [];
      const record = sampleRecord();
      const name = recordFileName(record.host_path);
      await writeRecord(spying(state.fs, ['writeFile', 'writeFileExclusive', 'rename', 'link', 'rm'], calls), state.dir, record);
      expect(calls).toEqual([`writeFile ${state.dir}/${name}`]);
      expect(await state.names()).toEqual([name]);
      expect(state.mode(name)).toBe(0o600);
      expect(parseRecord(await state.fs.readFile(`${state.dir}/${name}`), name)).toEqual({ ok: true, record });
      // A second write replaces it whole, and leaves nothing beside it either.
      const next = sampleRecord({ baseline: {} });
      await writeRecord(state.fs, state.dir, next);
      expect(await state.names()).toEqual([name]);
      expect(parseRecord(await state.fs.readFile(`${state.dir}/${name}`), name)).toEqual({ ok: true, record: next });
    } finally {
      await state.done();
    }
  });

  it('a write that fails before its content takes the name leaves the previous record whole, and no temp file', async () => {
    const state = await stateDirOn(disk);
    try {
      const first = sampleRecord();
      await writeRecord(state.fs, state.dir, first);
      // The disk fills once the new content is whole in the FileSystem's temp file, before the rename.
      const full: FileSystem = new Proxy(state.fs, {
        get(target, prop, receiver) {
          if (prop !== 'writeFile') return Reflect.get(target, prop, receiver) as unknown;
          return (path: string, data: Uint8Array, opts?: WriteOptions) =>
            target.writeFile(path, data, { ...opts, beforeReplace: () => Promise.reject(fsError('ENOSPC', 'write', path)) });
        },
      });
      await expect(writeRecord(full, state.dir, sampleRecord({ baseline: {} }))).rejects.toMatchObject({ code: 'ENOSPC' });
      expect(await state.names()).toEqual([recordFileName(first.host_path)]);
      const listed = await listRecords(state.fs, state.dir);
      expect(listed.records).toEqual([{ file: recordFileName(first.host_path), record: first }]);
    } finally {
      await state.done();
    }
  });
});

describe('listRecords', () => {
  it("lists a damaged record as unreadable instead of throwing, temp files (older versions' and the FileSystem's) as temps, and ignores other files", async () => {
    const good = sampleRecord();
    const badName = recordFileName('/host/mnt/memory/broken');
    const fs = new MemfsFileSystem({
      [`${STATE}/${badName}`]: '{"format":"memory-mounter/state-record","vers',
      [`${STATE}/notes.txt`]: 'operator notes',
      [`${STATE}/${recordFileName('/x')}.tmp-99999999-0badf00d`]: 'half',
      [`${STATE}/.mm-tmp-0123456789abcdef`]: 'half',
      [`${STATE}/.tmp-4242-0f8e2c1a-9b7d-4c3e-8a2f-1d6b5e4c3a21`]: 'not a record write',
    });
    await writeRecord(fs, STATE, good);
    const listed = await listRecords(fs, STATE);
    expect(listed.records.map((r) => r.record)).toEqual([good]);
    expect(listed.unreadable).toEqual([{ file: badName, reason: expect.stringMatching(/not valid JSON/) }]);
    expect(listed.olderTemps).toEqual([{ file: `${recordFileName('/x')}.tmp-99999999-0badf00d`, pid: 99999999 }]);
    expect(listed.fsTemps.map((t) => t.file)).toEqual(['.mm-tmp-0123456789abcdef']);
  });
});

describe('options: stateDir and keepUnpushed', () => {
  const client = new InMemoryStoreClient();
  const make = (over: Record<string, unknown>) => () => new MemoryMounter({ storeClient: client, memoryRoot: '/srv/mnt/memory', ...over });

  it.each<[string, unknown]>([
    ['relative', 'state'],
    ['not a string', 42],
    ['null', null],
    ['with NUL', '/srv/st\0ate'],
    ['the memory root itself', '/srv/mnt/memory/'],
    ['inside the memory root', '/srv/mnt/memory/.state'],
  ])('stateDir %s is a MemoryConfigError naming it', (_what, stateDir) => {
    expect(make({ stateDir })).toThrow(MemoryConfigError);
    try {
      make({ stateDir })();
    } catch (err) {
      expect((err as MemoryConfigError).option).toBe('stateDir');
    }
  });

  it('accepts an absolute stateDir beside the memory root, and keepUnpushed booleans', () => {
    expect(make({ stateDir: '/srv/state/' })).not.toThrow();
    expect(make({ stateDir: '/srv/mnt/memory-state' })).not.toThrow();
    expect(make({ keepUnpushed: true })).not.toThrow();
  });

  it.each([['yes'], [1], [null]])('keepUnpushed %j is a MemoryConfigError naming it', (keepUnpushed) => {
    expect(make({ keepUnpushed })).toThrow(expect.objectContaining({ name: 'MemoryConfigError', option: 'keepUnpushed' }));
  });

  it('recover needs a stateDir, validated the same way', async () => {
    await expect(MemoryMounter.recover({ storeClient: client } as never)).rejects.toMatchObject({ name: 'MemoryConfigError', option: 'stateDir' });
    await expect(MemoryMounter.recover({ storeClient: client, stateDir: 'rel' })).rejects.toMatchObject({ option: 'stateDir' });
    await expect(
      MemoryMounter.recover({ storeClient: client, stateDir: '/srv/mnt/memory/s', memoryRoot: '/srv/mnt/memory', fileSystem: new MemfsFileSystem() }),
    ).rejects.toMatchObject({ option: 'stateDir' });
  });
});
