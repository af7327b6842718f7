import { symlinkSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FaultyFileSystem, MemfsFileSystem } from '@memory-mounter/testing';
import { digestWarnings, type PathWarning } from '../src/decide/warning-digest.js';
import { DISKS, useHarness } from './harness.js';

/**
 * Issue 20 item 5: floods do not multiply output. One line per kind per round, with a count and
 * a few examples; a path is said again only when what is said about it changes.
 */
const warn = (path: string, message = 'left alone: is a symlink'): PathWarning => ({ level: 'warn', message, fields: { path } });

describe('digestWarnings (pure)', () => {
  it('one path is said as it is; many are one line with the count and three examples', () => {
    expect(digestWarnings(new Map(), [warn('/a')]).lines).toEqual([{ level: 'warn', message: 'left alone: is a symlink', fields: { path: '/a' } }]);
    const many = Array.from({ length: 50_000 }, (_, i) => warn(`/l${i}`));
    const { lines } = digestWarnings(new Map(), [...many, warn('/f', 'left alone: is not a regular file')]);
    expect(lines).toEqual([
      { level: 'warn', message: 'left alone: is a symlink (50000 paths)', fields: { count: 50_000, paths: ['/l0', '/l1', '/l2'], more: 49_997 } },
      { level: 'warn', message: 'left alone: is not a regular file', fields: { path: '/f' } },
    ]);
  });

  it('a path is said again only when what is said about it changes, or when it ends and comes back', () => {
    const first = digestWarnings(new Map(), [warn('/a'), warn('/b')]);
    const same = digestWarnings(first.said, [warn('/a'), warn('/b')]);
    expect(same.lines).toEqual([]);
    const changed = digestWarnings(same.said, [warn('/a', 'pull failed on disk'), warn('/b')]);
    expect(changed.lines.map((l) => l.message)).toEqual(['pull failed on disk']);
    const ended = digestWarnings(changed.said, [warn('/b')]);
    expect(ended.said.has('/a')).toBe(false);
    expect(digestWarnings(ended.said, [warn('/a', 'pull failed on disk'), warn('/b')]).lines.map((l) => l.message)).toEqual(['pull failed on disk']);
  });
});

describe.each(DISKS)('floods in the log, through the mounter on %s', (disk) => {
  const h = useHarness(disk);
  const symlink = (target: string, path: string) => {
    if (disk === 'memfs') (h.fs as MemfsFileSystem).vol.symlinkSync(target, path);
    else symlinkSync(target, path);
  };

  it('500 symlinks: one warning line in the pass that finds them, none in the next', async () => {
    const m = await h.mountNotes();
    for (let i = 0; i < 500; i++) symlink('/etc/passwd', `${h.notesDir}/l${i}.md`);
    const before = h.logger.warnings().length;
    await m.reconcile({ force: true });
    const first = h.logger.warnings().slice(before);
    expect(first.filter((l) => l.msg.startsWith('left alone: is a symlink'))).toEqual([
      expect.objectContaining({ msg: 'left alone: is a symlink (500 paths)', fields: expect.objectContaining({ count: 500 }) }),
    ]);
    const after = h.logger.warnings().length;
    await m.reconcile({ force: true });
    expect(h.logger.warnings().slice(after).filter((l) => l.msg.startsWith('left alone'))).toEqual([]);
    await m.finalize();
  });

  it('pulls that fail on disk every pass: one line in the first pass, none while they go on failing the same way', async () => {
    const faulty = new FaultyFileSystem(h.fs);
    const m = await h.mountNotes({ fileSystem: faulty });
    for (let i = 0; i < 40; i++) h.client.writeMemory('memstore_notes', `/n${i}.md`, `remote ${i}`);
    for (let i = 0; i < 40; i++) faulty.failAlways('writeFileExclusive', `${h.notesDir}/n${i}.md`, 'EIO');
    for (let i = 0; i < 40; i++) faulty.failAlways('writeFile', `${h.notesDir}/n${i}.md`, 'EIO');
    const failures = () => h.logger.warnings().filter((l) => l.msg.startsWith('pull failed'));
    await m.reconcile({ force: true });
    expect(failures()).toEqual([expect.objectContaining({ msg: 'pull failed on disk (40 paths)', fields: expect.objectContaining({ count: 40 }) })]);
    await m.reconcile({ force: true });
    await m.reconcile({ force: true });
    expect(failures()).toHaveLength(1);
    faulty.heal();
    await m.finalize();
  });
});
