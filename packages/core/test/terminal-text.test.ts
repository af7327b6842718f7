import createDebug from 'debug';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { debugLogger, escapeForTerminal, jsonForTerminal, MemoryWriteRefusedError } from '@memory-mounter/core';
import { FolderRefusal } from '@memory-mounter/core/engine';

/**
 * Issue 20 item 3: file names reach a person's terminal only escaped. A name may hold ESC, CSI
 * and OSC sequences, CR and LF, bidi controls and U+2028; none reaches the terminal as such.
 */
// eslint-disable-next-line no-control-regex
const RAW = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]/u;
const HOSTILE = [
  '/a\u001b]0;pwned\u0007.md', // OSC: retitles the terminal
  '/b\u001b[2K\r.md', // CSI erase line, CR
  '/c.md\ndeleted /a.md', // a forged line
  '/d\u202eexe.md', // right-to-left override
  '/e\u2028f.md', // line separator
  '/g\u200bh\u2066i\ufeff.md', // zero width, isolate, BOM
  '/j\u0085k\u009bl.md', // NEL, C1 CSI
];

describe('escapeForTerminal', () => {
  it('leaves an ordinary path as it is, whatever its script', () => {
    for (const path of ['/notes/a.md', '/Ünïcödé/日本語/ملاحظة.md', '/with space.md', '/emoji 🧠.md']) {
      expect(escapeForTerminal(path)).toBe(path);
    }
  });

  it('makes every control, format and separator character visible', () => {
    expect(escapeForTerminal('/b\u001b[2K\r.md')).toBe('/b\\x1b[2K\\r.md');
    expect(escapeForTerminal('/c.md\ndeleted /a.md')).toBe('/c.md\\ndeleted /a.md');
    expect(escapeForTerminal('/d\u202eexe.md')).toBe('/d\\u{202e}exe.md');
    expect(escapeForTerminal('/e\u2028f.md')).toBe('/e\\u{2028}f.md');
    // A backslash is doubled: a name holding the text `\x1b` never reads as an escape.
    expect(escapeForTerminal('/a\\x1b.md')).toBe('/a\\\\x1b.md');
    for (const path of HOSTILE) expect(escapeForTerminal(path)).not.toMatch(RAW);
  });

  it('jsonForTerminal is JSON of the same value, with nothing raw a terminal acts on', () => {
    for (const path of HOSTILE) {
      const json = jsonForTerminal({ path });
      expect(json).not.toMatch(RAW);
      expect(JSON.parse(json)).toEqual({ path });
    }
  });

  it('error messages carry the path escaped (the path field keeps it exactly)', () => {
    for (const path of HOSTILE) {
      const refusal = new FolderRefusal('is_symlink', path, 'is a symlink');
      expect(refusal.message).not.toMatch(RAW);
      expect(refusal.wirePath).toBe(path);
      const refused = new MemoryWriteRefusedError(path, 'read_only', `${path} is in a read-only store`);
      expect(refused.message).not.toMatch(RAW);
      expect(refused.path).toBe(path);
    }
  });
});

describe('debugLogger and hostile names', () => {
  let lines: string[];
  let previousLog: typeof createDebug.log;
  let previousNamespaces: string;
  beforeEach(() => {
    lines = [];
    previousLog = createDebug.log;
    previousNamespaces = createDebug.disable();
    createDebug.log = (...args: unknown[]) => void lines.push(args.map(String).join(' '));
    createDebug.enable('memory-mounter:*');
  });
  afterEach(() => {
    createDebug.log = previousLog;
    createDebug.enable(previousNamespaces);
  });

  it('a message is never a format string: %o, %s and %% in a path are printed as they are', () => {
    debugLogger().warn('left alone: /100%o/%s/%%.md', { path: '/x' });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('left alone: /100%o/%s/%%.md {"path":"/x"}');
    expect(lines[0]).not.toContain('undefined');
  });

  it('no control, bidi or separator character of a name reaches the log line, in the message or the fields', () => {
    for (const path of HOSTILE) debugLogger().warn(`left alone: ${path}`, { path });
    expect(lines).toHaveLength(HOSTILE.length);
    // The line's own framing (debug's colours, when on) is not the name's: look at what follows the namespace.
    for (const line of lines) expect(line.slice(line.indexOf('left alone'))).not.toMatch(RAW);
  });
});
