import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryApiServer } from '@memory-mounter/testing';
import { escapeForTerminal } from '@memory-mounter/core';
import { emulator, exited, hazardsIn, lines, run, start, workFolder } from './bin-harness.js';

describe('escapeForTerminal', () => {
  it.each([
    ['plain /notes/a.md', 'plain /notes/a.md'],
    ['/é/日本語.md', '/é/日本語.md'],
    ['\x1b]0;owned\x07', '\\x1b]0;owned\\x07'],
    ['a\r\x1b[2Kb', 'a\\r\\x1b[2Kb'],
    ['c\n  deleted /a.md', 'c\\n  deleted /a.md'],
    ['tab\there', 'tab\\there'],
    ['\x9b31m (C1 CSI) \x7f', '\\x9b31m (C1 CSI) \\x7f'],
    ['d\u202egpj.md \u2066x\u2069 \u200f', 'd\\u{202e}gpj.md \\u{2066}x\\u{2069} \\u{200f}'],
    ['line\u2028sep\u2029para', 'line\\u{2028}sep\\u{2029}para'],
    ['zero\u200bwidth\ufeff soft\u00adhyphen', 'zero\\u{200b}width\\u{feff} soft\\xadhyphen'],
    ['lone \ud800 surrogate', 'lone \\u{d800} surrogate'],
    ['a\\x1b is text', 'a\\\\x1b is text'],
  ])('%j', (input, shown) => {
    expect(escapeForTerminal(input)).toBe(shown);
    expect(hazardsIn(escapeForTerminal(input))).toEqual([]);
  });
});

// The built bin in a child process, from a folder outside the checkout.

let w: Awaited<ReturnType<typeof workFolder>>;
beforeEach(async () => {
  w = await workFolder();
});
afterEach(async () => {
  await w.cleanup();
});

/** Names that would retitle the terminal, erase a line, forge one, or reorder what follows. */
const HOSTILE_DIRS = ['c\n  deleted '];
const HOSTILE_FILES = ['a\x1b]0;owned\x07.md', 'b\r\x1b[2K.md', 'c\n  deleted /a.md', 'd\u202egpj.md', 'e\u2028x.md', 'f\x9b2J.md'];

async function plantHostile(dir: string): Promise<void> {
  for (const d of HOSTILE_DIRS) await mkdir(join(dir, d), { recursive: true });
  for (const f of HOSTILE_FILES) await writeFile(join(dir, f), 'hostile\n');
}

describe('no text output carries a control character from a file name', () => {
  it('status, push --dry-run, the finalize summary, recover and errors escape every name; --json keeps the names as they are', async () => {
    const { server, args, env: withKey } = await emulator();
    const env = withKey(w.env);
    try {
      const texts: Record<string, string> = {};
      expect((await run(['pull', 'memstore_t', './p', ...args], { cwd: w.mounts, env })).code).toBe(0);
      await plantHostile(join(w.mounts, 'p'));
      texts.status = (await run(['status', './p', ...args], { cwd: w.mounts, env })).stdout;
      texts.dryRun = (await run(['push', './p', '--dry-run', '--local'], { cwd: w.mounts, env })).stdout;
      expect(texts.status).toContain('a\\x1b]0;owned\\x07.md');
      expect(texts.dryRun).toContain('/c\\n  deleted /a.md');
      const json = JSON.parse((await run(['status', './p', '--json', '--local'], { cwd: w.mounts, env })).stdout) as { new: string[] };
      expect(json.new).toEqual(expect.arrayContaining(['/a\x1b]0;owned\x07.md', '/c\n  deleted /a.md', '/d\u202egpj.md']));

      // A mount: the names are refused (never pushed), named in the summary, and the folder is kept.
      const child = start(['mount', 'memstore_t', './m', ...args, '--interval', '60'], { cwd: w.mounts, env });
      const out = lines(child);
      await out.waitFor(/^mounted /);
      await plantHostile(join(w.mounts, 'm'));
      child.kill('SIGINT');
      expect((await exited(child)).code).toBe(1);
      texts.mount = out.seen.join('\n');
      expect(texts.mount).toMatch(/\/b\\r\\x1b\[2K\.md not pushed/);
      texts.recover = (await run(['recover', './m', ...args], { cwd: w.mounts, env })).stdout;
      expect(texts.recover).toMatch(/\/d\\u\{202e\}gpj\.md not pushed/);

      // Names from the command line too, on stderr.
      texts.badDir = (await run(['mount', 'memstore_t', './x\x1b]0;t\x07', ...args], { cwd: w.mounts, env })).stderr;
      texts.noDir = (await run(['status', './\x1b[2Knope\r'], { cwd: w.mounts, env })).stderr;
      expect(texts.noDir).toContain('\\x1b[2Knope\\r does not exist');

      for (const [where, text] of Object.entries(texts)) expect(hazardsIn(text), where).toEqual([]);
    } finally {
      await server.close();
    }
  });
});

describe('mount: what a pass says', () => {
  it('a 200-file pass is one short line of counts and a few paths; a deletion says when it will be sent; --verbose names every path', async () => {
    const { server, args, env: withKey } = await emulator({ '/keep.md': 'k\n', '/gone.md': 'g\n' });
    const env = withKey(w.env);
    try {
      const child = start(['mount', 'memstore_t', './m', ...args, '--interval', '1'], { cwd: w.mounts, env });
      const out = lines(child);
      await out.waitFor(/^mounted /);
      server.seed('memstore_t', Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`/bulk/file-${String(i).padStart(3, '0')}.md`, `${i}\n`])));
      const pass = await out.waitFor(/ pulled 200 /);
      expect(pass).toMatch(/pulled 200 \(\/bulk\/file-000\.md \/bulk\/file-001\.md \/bulk\/file-002\.md \+197 more; --verbose lists all\)/);
      // How the store was read and what the pass cost it, last.
      expect(pass).toMatch(/ \[(feed|listing: [a-z_]+), \d+ requests?(, \d+ retried)?\]$/);
      expect(pass.length).toBeLessThan(200);

      await rm(join(w.mounts, 'm', 'gone.md'));
      const pending = await out.waitFor(/\/gone\.md deleted locally/);
      const left = Number(/in (\d+) s unless it comes back/.exec(pending)?.[1]);
      expect(left).toBeGreaterThan(0);
      expect(left).toBeLessThanOrEqual(30);
      expect(server.snapshot('memstore_t')['/gone.md']).toBe('g\n'); // not yet

      child.kill('SIGINT');
      expect((await exited(child)).code).toBe(0);
      expect(out.seen.join('\n')).toMatch(/finalized \(completed\): .*deleted 1 in the store/);
      expect(server.snapshot('memstore_t')['/gone.md']).toBeUndefined();

      const verbose = start(['mount', 'memstore_t', './v', ...args, '--interval', '1', '--verbose'], { cwd: w.mounts, env });
      const vout = lines(verbose);
      await vout.waitFor(/^mounted /);
      server.seed('memstore_t', { '/more/1.md': '1', '/more/2.md': '2', '/more/3.md': '3', '/more/4.md': '4', '/more/5.md': '5' });
      expect(await vout.waitFor(/ pulled 5 /)).toMatch(/pulled 5 \(\/more\/1\.md \/more\/2\.md \/more\/3\.md \/more\/4\.md \/more\/5\.md\)/);
      verbose.kill('SIGINT');
      expect((await exited(verbose)).code).toBe(0);
    } finally {
      await server.close();
    }
  });

  it('--deletions log_only: a deletion says it is never sent', async () => {
    const { server, args, env: withKey } = await emulator({ '/gone.md': 'g\n' });
    try {
      const child = start(['mount', 'memstore_t', './m', ...args, '--interval', '1', '--deletions', 'log_only'], { cwd: w.mounts, env: withKey(w.env) });
      const out = lines(child);
      await out.waitFor(/^mounted /);
      await rm(join(w.mounts, 'm', 'gone.md'));
      expect(await out.waitFor(/\/gone\.md deleted locally/)).toMatch(/not deleted in the store \(--deletions log_only\)/);
      child.kill('SIGINT');
      expect((await exited(child)).code).toBe(0);
      expect(server.snapshot('memstore_t')['/gone.md']).toBe('g\n');
    } finally {
      await server.close();
    }
  });
});

describe('refusals before anything starts, in the words of the command line', () => {
  it('--interval 15000 is refused before any emulator starts, naming the flag and its unit', async () => {
    const r = await run(['mount', 'memstore_demo', './d', '--emulator', '--interval', '15000'], { cwd: w.mounts, env: w.env });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe(''); // no `emulator: http://…` line: nothing was started
    expect(r.stderr).toMatch(/--interval takes seconds, at most 3600 .*15 for 15000 ms/);
    expect(r.stderr).not.toMatch(/memory_sync_interval|memorySyncIntervalMs/);
    expect((await run(['mount', 'memstore_demo', './d', '--emulator', '--deletions', 'off'], { cwd: w.mounts, env: w.env })).stderr).toMatch(/--deletions takes enabled, log_only, disabled/);
    expect(await readdir(w.mounts)).toEqual([]);
  });

  it('an unknown store id is an error (the service answers 404), and nothing is written', async () => {
    // The service's answer for a store it does not know.
    const service = createServer((_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: 'memory store not found' } }));
    });
    await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
    try {
      const baseURL = `http://127.0.0.1:${(service.address() as AddressInfo).port}`;
      for (const command of ['pull', 'mount']) {
        const r = await run([command, 'memstore_typo', './typo', '--base-url', baseURL], { cwd: w.mounts, env: { ...w.env, ANTHROPIC_API_KEY: 'k' } });
        expect(r.code, command).toBe(2);
        expect(r.stderr, command).toMatch(/no memory store memstore_typo: the service does not know this id/);
        expect(await readdir(w.mounts)).toEqual([]);
        expect((await readdir(w.state)).filter((n) => n.startsWith('mm-state-'))).toEqual([]);
      }
    } finally {
      await new Promise((resolve) => service.close(resolve));
    }
  });

  // The bundled emulator answers 404 for a store it was not seeded with once it knows its stores
  // (`hasStore`, with the 404, on branch wip-worker); before that it makes an empty store on first use.
  it.runIf(typeof (MemoryApiServer.prototype as { hasStore?: unknown }).hasStore === 'function')('--emulator: an id other than memstore_demo is an error too', async () => {
    const r = await run(['pull', 'memstore_typo', './typo', '--emulator'], { cwd: w.mounts, env: w.env });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no memory store memstore_typo/);
    expect(await readdir(w.mounts)).toEqual([]);
  });
});
