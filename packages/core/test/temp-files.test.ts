import { describe, expect, it } from 'vitest';
import { isTempFileName, tempFileName } from '@memory-mounter/core';

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
