import type { BetaRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import { ToolError } from '@anthropic-ai/sdk/lib/tools/ToolError';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { withMemorySync } from '@memory-mounter/anthropic';
import { MemoryMounter } from '@memory-mounter/core';
import { InMemoryStoreClient, MemfsFileSystem } from '@memory-mounter/testing';

const ROOT = '/mnt/memory';
const encoder = new TextEncoder();

/** A write tool in the SDK's runnable shape that writes through the test filesystem. */
function writeTool(fs: MemfsFileSystem, calls: string[]): BetaRunnableTool {
  return {
    name: 'write',
    description: 'write a file',
    input_schema: { type: 'object', properties: { file_path: { type: 'string' }, content: { type: 'string' } } },
    parse: (x: unknown) => x,
    run: async ({ file_path, content }: { file_path: string; content: string }) => {
      calls.push(file_path);
      await fs.writeFile(file_path.startsWith('/') ? file_path : `${ROOT}/notes/${file_path}`, encoder.encode(content));
      return 'ok';
    },
  } as BetaRunnableTool;
}

describe('withMemorySync', () => {
  let fs: MemfsFileSystem;
  let client: InMemoryStoreClient;
  let now: number;
  let mounter: MemoryMounter;
  let calls: string[];

  beforeEach(async () => {
    fs = new MemfsFileSystem({ [ROOT]: null });
    client = new InMemoryStoreClient();
    client.seed('memstore_rw', { '/a.md': 'a' });
    client.seed('memstore_ro', { '/style.md': 'house style' });
    now = 0;
    mounter = new MemoryMounter({ storeClient: client, fileSystem: fs, memoryRoot: ROOT, now: () => now, newFileSettle: 0 });
    await mounter.materialize([
      { type: 'memory_store', memory_store_id: 'memstore_rw', name: 'notes' },
      { type: 'memory_store', memory_store_id: 'memstore_ro', name: 'style', access: 'read_only' },
    ]);
    calls = [];
  });

  it('refuses a write into a read-only store with an error result; the tool never runs', async () => {
    const [tool] = withMemorySync([writeTool(fs, calls)], mounter);
    const result = tool!.run({ file_path: `${ROOT}/style/style.md`, content: 'defaced' });
    await expect(result).rejects.toBeInstanceOf(ToolError);
    await expect(result).rejects.toThrow(/refused: .*read-only/);
    expect(calls).toEqual([]);
    expect(new TextDecoder().decode(await fs.readFile(`${ROOT}/style/style.md`))).toBe('house style');
  });

  it('logs each refusal, with the tool, the path and the reason', async () => {
    const lines: { level: string; msg: string; fields?: Record<string, unknown> }[] = [];
    const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => void lines.push({ level, msg, fields });
    const logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
    const [tool] = withMemorySync([writeTool(fs, calls)], mounter, { logger, realPath: false });
    await expect(tool!.run({ file_path: `${ROOT}/style/style.md`, content: 'defaced' })).rejects.toBeInstanceOf(ToolError);
    const refusal = lines.find((l) => l.msg === 'write tool refused');
    expect(refusal?.level).toBe('warn');
    expect(refusal?.fields).toMatchObject({ tool: 'write', path: `${ROOT}/style/style.md`, reason: 'read_only' });
  });

  it('refuses a write under the memory root outside every store (outside_store)', async () => {
    const [tool] = withMemorySync([writeTool(fs, calls)], mounter);
    await expect(tool!.run({ file_path: `${ROOT}/scratch.txt`, content: 'x' })).rejects.toThrow(/in no memory store/);
    expect(calls).toEqual([]);
  });

  it('resolves relative paths against workdir before the check (.. cannot escape it)', async () => {
    const [tool] = withMemorySync([writeTool(fs, calls)], mounter, { workdir: `${ROOT}/notes` });
    await expect(tool!.run({ file_path: '../style/x.md', content: 'x' })).rejects.toBeInstanceOf(ToolError);
    await expect(tool!.run({ file_path: 'ok.md', content: 'x' })).resolves.toBe('ok');
  });

  it('lets allowed writes and other tools through untouched', async () => {
    const echo = { name: 'echo', input_schema: { type: 'object' }, parse: (x: unknown) => x, run: async () => 'echoed' } as unknown as BetaRunnableTool;
    const [write, other] = withMemorySync([writeTool(fs, calls), echo], mounter);
    await expect(write!.run({ file_path: `${ROOT}/notes/b.md`, content: 'b' })).resolves.toBe('ok');
    await expect(other!.run({ file_path: `${ROOT}/style/style.md` })).resolves.toBe('echoed');
    expect(calls).toEqual([`${ROOT}/notes/b.md`]);
  });

  it('reconciles after a tool call once the interval has passed, not before', async () => {
    const [tool] = withMemorySync([writeTool(fs, calls)], mounter);
    await tool!.run({ file_path: `${ROOT}/notes/b.md`, content: 'b' });
    expect(client.count('list')).toBe(2); // the two downloads only
    now = 15_000;
    await tool!.run({ file_path: `${ROOT}/notes/c.md`, content: 'c' });
    expect(client.snapshot('memstore_rw')).toEqual({ '/a.md': 'a', '/b.md': 'b', '/c.md': 'c' });
  });

  it('a failing sync never fails the tool call', async () => {
    const [tool] = withMemorySync([writeTool(fs, calls)], mounter);
    await mounter.finalize();
    now = 60_000;
    await expect(tool!.run({ file_path: '/mnt/elsewhere.txt', content: 'x' })).resolves.toBe('ok');
  });

  describe('the target is resolved as the kernel will, through the mounter\'s FileSystem', () => {
    // The agent owns notes/: a link planted there makes `link/..` the parent of its target.
    beforeEach(async () => {
      await fs.mkdir(`${ROOT}/style/sub`);
      await fs.mkdir(`${ROOT}/scratch/dir`, { recursive: true });
      fs.vol.symlinkSync(`${ROOT}/style/sub`, `${ROOT}/notes/to-ro`);
      fs.vol.symlinkSync(`${ROOT}/scratch/dir`, `${ROOT}/notes/to-scratch`);
      // One level down, so that the path as written is not a marker itself.
      await fs.mkdir(`${ROOT}/notes/d`);
      fs.vol.symlinkSync('../../style/sub', `${ROOT}/notes/d/to-ro`);
    });

    it.each([
      ['into a read-only store', 'to-ro/../x.md', /refused: .*to-ro\/\.\.\/x\.md is in the read-only memory store mounted at \/mnt\/memory\/style/],
      ["into a store's marker", 'd/to-ro/../.anthropic-memory-store', /refused: .* is the store marker of \/mnt\/memory\/style/],
      ['outside every store', 'to-scratch/../x.md', /refused: .* is under the memory root \/mnt\/memory but in no memory store/],
    ])('refuses link/.. %s, absolute or relative to workdir, with realPath false', async (_label, target, message) => {
      const [tool] = withMemorySync([writeTool(fs, calls)], mounter, { workdir: `${ROOT}/notes`, realPath: false });
      for (const file_path of [target, `${ROOT}/notes/${target}`]) {
        const result = tool!.run({ file_path, content: 'defaced' });
        await expect(result).rejects.toBeInstanceOf(ToolError);
        await expect(result).rejects.toThrow(message);
      }
      expect(calls).toEqual([]);
      expect(new TextDecoder().decode(await fs.readFile(`${ROOT}/style/style.md`))).toBe('house style');
      expect(await fs.lstat(`${ROOT}/style/x.md`)).toBeNull();
    });

    it('a realPath function is still applied, and one that throws refuses the write', async () => {
      const mapped = withMemorySync([writeTool(fs, calls)], mounter, { realPath: async () => `${ROOT}/style/style.md` })[0]!;
      await expect(mapped.run({ file_path: `${ROOT}/notes/b.md`, content: 'b' })).rejects.toThrow(/refused: .*read-only/);
      const failing = withMemorySync([writeTool(fs, calls)], mounter, {
        realPath: async () => {
          throw Object.assign(new Error('too many links'), { code: 'ELOOP' });
        },
      })[0]!;
      const result = failing.run({ file_path: `${ROOT}/notes/b.md`, content: 'b' });
      await expect(result).rejects.toBeInstanceOf(ToolError);
      await expect(result).rejects.toThrow(`write: refused: ${ROOT}/notes/b.md cannot be resolved (ELOOP)`);
      expect(calls).toEqual([]);
    });
  });

  it('a null mounter leaves the tools as they are', () => {
    const tools = [writeTool(fs, calls)];
    expect(withMemorySync(tools, null)).toEqual(tools);
  });
});

describe('withMemorySync on a real disk: link/.. lands where the kernel takes it', () => {
  let base: string;
  let memoryRoot: string;
  let mounter: MemoryMounter;
  beforeEach(async () => {
    const { mkdtemp, mkdir, realpath, symlink } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { NodeFileSystem } = await import('@memory-mounter/core');
    base = await realpath(await mkdtemp(`${tmpdir()}/mm-guard-`));
    memoryRoot = `${base}/memory`;
    await mkdir(memoryRoot);
    const client = new InMemoryStoreClient();
    client.seed('memstore_rw', { '/a.md': 'a' });
    client.seed('memstore_ro', { '/style.md': 'house style' });
    mounter = new MemoryMounter({ storeClient: client, fileSystem: new NodeFileSystem(), memoryRoot });
    await mounter.materialize([
      { type: 'memory_store', memory_store_id: 'memstore_rw', name: 'notes' },
      { type: 'memory_store', memory_store_id: 'memstore_ro', name: 'style', access: 'read_only' },
    ]);
    await mkdir(`${memoryRoot}/style/sub`);
    await mkdir(`${memoryRoot}/scratch/dir`, { recursive: true });
    await symlink(`${memoryRoot}/style/sub`, `${memoryRoot}/notes/to-ro`);
    await symlink('../scratch/dir', `${memoryRoot}/notes/to-scratch`);
    // One level down, so that the path as written is not a marker itself.
    await mkdir(`${memoryRoot}/notes/d`);
    await symlink(`${memoryRoot}/style/sub`, `${memoryRoot}/notes/d/to-ro`);
  });
  afterEach(async () => {
    await mounter.finalize();
    const { rm } = await import('node:fs/promises');
    await rm(base, { recursive: true, force: true });
  });

  it.each([
    ['into a read-only store', 'to-ro/../x.md', 'style/x.md'],
    ["into a store's marker", 'd/to-ro/../.anthropic-memory-store', 'style/.anthropic-memory-store'],
    ['outside every store', 'to-scratch/../x.md', 'scratch/x.md'],
  ])('refuses link/.. %s, with the default realPath and with false; nothing is written', async (_label, file, landing) => {
    const { readFile, writeFile } = await import('node:fs/promises');
    const workdir = `${memoryRoot}/notes`;
    const before = await readFile(`${memoryRoot}/${landing}`, 'utf8').catch(() => null);
    const writes: string[] = [];
    const save = {
      name: 'save',
      input_schema: { type: 'object' },
      parse: (x: unknown) => x,
      run: async ({ file }: { file: string }) => {
        writes.push(file);
        // As a tool writes: the path handed to the kernel, not normalised first.
        await writeFile(`${workdir}/${file}`, 'defaced');
        return 'saved';
      },
    } as unknown as BetaRunnableTool;
    for (const realPath of [undefined, false as const]) {
      const [tool] = withMemorySync([save], mounter, {
        workdir,
        writeTools: ['save'],
        targetPath: (_name, input) => (input as { file: string }).file,
        ...(realPath === undefined ? {} : { realPath }),
      });
      await expect(tool!.run({ file })).rejects.toBeInstanceOf(ToolError);
    }
    expect(writes).toEqual([]);
    expect(await readFile(`${memoryRoot}/${landing}`, 'utf8').catch(() => null)).toBe(before);
  });
});

describe('withMemorySync on a real disk: links do not get past the guard', () => {
  it('refuses a write whose path goes through a symlink into a read-only store', async () => {
    const { mkdtemp, mkdir, readFile, realpath, rm, symlink, writeFile } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { NodeFileSystem } = await import('@memory-mounter/core');
    const base = await realpath(await mkdtemp(join(tmpdir(), 'mm-guard-')));
    try {
      const memoryRoot = join(base, 'memory');
      const workdir = join(base, 'work');
      await mkdir(memoryRoot);
      await mkdir(workdir);
      const client = new InMemoryStoreClient();
      client.seed('memstore_ro', { '/style.md': 'house style' });
      const mounter = new MemoryMounter({ storeClient: client, fileSystem: new NodeFileSystem(), memoryRoot });
      await mounter.materialize([{ type: 'memory_store', memory_store_id: 'memstore_ro', name: 'style', access: 'read_only' }]);
      await symlink(join(memoryRoot, 'style'), join(workdir, 'link'));
      const writes: string[] = [];
      const custom = {
        name: 'save',
        input_schema: { type: 'object' },
        parse: (x: unknown) => x,
        run: async ({ file }: { file: string }) => {
          writes.push(file);
          await writeFile(join(workdir, file), 'defaced');
          return 'saved';
        },
      } as unknown as BetaRunnableTool;
      const [tool] = withMemorySync([custom], mounter, {
        workdir,
        writeTools: ['save'],
        targetPath: (_name, input) => (input as { file: string }).file,
      });
      await expect(tool!.run({ file: 'link/style.md' })).rejects.toBeInstanceOf(ToolError);
      expect(writes).toEqual([]);
      expect(await readFile(join(memoryRoot, 'style', 'style.md'), 'utf8')).toBe('house style');
      await mounter.finalize();
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });
});
