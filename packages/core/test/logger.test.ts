import createDebug from 'debug';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { debugLogger } from '@memory-mounter/core';

/** debugLogger: a host's namespace adds to the library's, never silences it. */
describe('debugLogger', () => {
  let lines: string[];
  let previousLog: typeof createDebug.log;
  let previousNamespaces: string;
  beforeEach(() => {
    lines = [];
    previousLog = createDebug.log;
    previousNamespaces = createDebug.disable();
    createDebug.log = (...args: unknown[]) => void lines.push(args.map(String).join(' '));
  });
  afterEach(() => {
    createDebug.log = previousLog;
    createDebug.enable(previousNamespaces);
  });

  it("a host's logger logs under its namespace", () => {
    createDebug.enable('my-worker:*');
    debugLogger('my-worker').warn('conflict', { path: '/a.md' });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('my-worker:warn');
    expect(lines[0]).toContain('conflict {"path":"/a.md"}');
  });

  it("DEBUG=memory-mounter:* still shows what a host's logger is given", () => {
    createDebug.enable('memory-mounter:*');
    debugLogger('my-worker').info('mounted', { memory_store_id: 'memstore_1' });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('memory-mounter:info');
    expect(lines[0]).toContain('memstore_1');
  });

  it('with both enabled, each line is printed once, under the host namespace', () => {
    createDebug.enable('my-worker:*,memory-mounter:*');
    debugLogger('my-worker').error('boom');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('my-worker:error');
  });

  it('levels filter as documented; nothing is printed when nothing is enabled', () => {
    debugLogger('my-worker').warn('quiet');
    expect(lines).toEqual([]);
    createDebug.enable('memory-mounter:warn');
    const log = debugLogger('my-worker');
    log.debug('hidden');
    log.warn('shown');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('shown');
  });
});
