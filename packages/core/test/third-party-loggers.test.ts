import { Console } from 'node:console';
import { Writable } from 'node:stream';
import bunyan from 'bunyan';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { asLogger, fieldsFirstLogger, type Logger } from '@memory-mounter/core';
import { DISKS, STORE, useHarness } from './harness.js';

/**
 * The `logger` option takes the loggers hosts already have, with the real packages: pino and
 * bunyan take `(fields, msg)`, this library calls `(msg, fields)`. Called the library's way,
 * pino prints `{"msg":"mounted"}` and nothing else; every field must reach the line.
 */

/** A sink that keeps each JSON line a logger writes. */
function jsonSink(): { stream: { write(line: string): void }; lines: () => Record<string, unknown>[] } {
  const raw: string[] = [];
  return {
    stream: { write: (line: string) => void raw.push(line) },
    lines: () =>
      raw
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

for (const kind of DISKS) {
  describe(`third-party loggers as \`logger\` (${kind})`, () => {
    const h = useHarness(kind);

    it("a pino logger's lines carry memory_store_id and path", async () => {
      const sink = jsonSink();
      const logger = pino({ level: 'debug' }, sink.stream);
      const mounter = await h.mountNotes({ logger });
      await h.write(`${h.notesDir}/new.md`, 'fresh');
      h.clock.advance(60);
      await mounter.reconcile({ force: true });
      await mounter.finalize();

      const mounted = sink.lines().find((l) => l.msg === 'mounted');
      expect(mounted).toMatchObject({ memory_store_id: STORE, path: h.notesDir, memories: 3 });
      // A line about one memory: its wire path, bound to the store by the store's own logger.
      const perPath = sink.lines().filter((l) => l.memory_store_id === STORE && typeof l.path === 'string' && l.path.startsWith('/'));
      expect(perPath.length).toBeGreaterThan(0);
      expect(sink.lines().find((l) => l.msg === 'store synced')).toMatchObject({ memory_store_id: STORE, pushed: 1 });
      // Levels map one to one: pino's `level` numbers for debug (20) and info (30).
      expect(new Set(sink.lines().map((l) => l.level))).toEqual(new Set([20, 30]));
    });

    it("a pino child logger keeps its bindings and gets the library's fields", async () => {
      const sink = jsonSink();
      const logger = pino({ level: 'info' }, sink.stream).child({ worker: 'w1' });
      const mounter = await h.mountNotes({ logger });
      await mounter.finalize();
      expect(sink.lines().find((l) => l.msg === 'mounted')).toMatchObject({ worker: 'w1', memory_store_id: STORE, path: h.notesDir });
    });

    it("a bunyan logger's records carry memory_store_id and path", async () => {
      const sink = jsonSink();
      const logger = bunyan.createLogger({ name: 'worker', streams: [{ level: 'debug', stream: sink.stream as unknown as NodeJS.WritableStream }] });
      const mounter = await h.mountNotes({ logger });
      await mounter.finalize();
      const mounted = sink.lines().find((l) => l.msg === 'mounted');
      expect(mounted).toMatchObject({ name: 'worker', memory_store_id: STORE, path: h.notesDir, memories: 3 });
    });

    it('the console logs the message and its fields', async () => {
      const out: string[] = [];
      const stream = new Writable({ write: (chunk, _enc, done) => void (out.push(String(chunk)), done()) });
      const logger = new Console({ stdout: stream, stderr: stream });
      const mounter = await h.mountNotes({ logger });
      await mounter.finalize();
      const mounted = out.find((l) => l.startsWith('mounted'));
      expect(mounted).toContain(`memory_store_id: '${STORE}'`);
      expect(mounted).toContain(`path: '${h.notesDir}'`);
    });
  });
}

describe('asLogger', () => {
  it('leaves a (msg, fields) logger as it is, and wraps pino and bunyan', () => {
    const own: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
    expect(asLogger(own)).toBe(own);
    expect(asLogger(console)).toBe(console);
    const p = pino({ enabled: false });
    expect(asLogger(p)).not.toBe(p);
    const b = bunyan.createLogger({ name: 'x', streams: [] });
    expect(asLogger(b)).not.toBe(b);
  });

  it('fieldsFirstLogger calls (fields, msg), with {} for a line without fields', () => {
    const calls: unknown[][] = [];
    const target = { debug: (...a: unknown[]) => void calls.push(a), info: (...a: unknown[]) => void calls.push(a), warn: () => {}, error: () => {} };
    const logger = fieldsFirstLogger(target);
    logger.info('mounted', { path: '/a.md' });
    logger.debug('plain');
    expect(calls).toEqual([
      [{ path: '/a.md' }, 'mounted'],
      [{}, 'plain'],
    ]);
  });
});
