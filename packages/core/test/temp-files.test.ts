import { describe, expect, it } from 'vitest';
import { isTempFileName, tempFileName } from '@memory-mounter/core';
import { isOwnTempFileName, olderRecordTempWriter } from '../src/model/unsynced-names.js';

describe('tempFileName', () => {
  it('gives distinct, recognisable names across many draws of random bytes', () => {
    // Several times the names one draw of the CSPRNG serves, so the refill is crossed.
    const names = Array.from({ length: 3_000 }, () => tempFileName());
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) {
      expect(name).toMatch(/^\.mm-tmp-[0-9a-f]{16}$/);
      expect(isTempFileName(name)).toBe(true);
    }
  });
});

describe('isOwnTempFileName and olderRecordTempWriter', () => {
  it("tell the engine's own temp files from the toolset's, and the record temps of older versions from anything else", () => {
    const ours = tempFileName();
    const toolset = '.tmp-4242-0f8e2c1a-9b7d-4c3e-8a2f-1d6b5e4c3a21';
    const older = `mm-state-${'0'.repeat(31)}a.json.tmp-4242-0badf00d`;
    expect(isOwnTempFileName(ours)).toBe(true);
    expect([isTempFileName(toolset), isOwnTempFileName(toolset)]).toEqual([true, false]);
    expect(olderRecordTempWriter(older)).toBe(4242);
    for (const name of [ours, toolset, `mm-state-${'0'.repeat(32)}.json`, `${older}x`, `notes.md.tmp-4242-0badf00d`]) {
      expect(olderRecordTempWriter(name)).toBeNull();
    }
    expect(isOwnTempFileName(older)).toBe(false);
  });
});
