import { describe, expect, it } from 'vitest';
import { claimedItemFrom } from '../../src/claimed-item.js';

// handleItem's fallbacks, row by row: the option, then the worker's own (the key only), then
// the variable `ant worker poll --on-work` sets; an empty value counts as absent.

const ENV = {
  ANTHROPIC_WORK_ID: 'work_env',
  ANTHROPIC_ENVIRONMENT_ID: 'env_env',
  ANTHROPIC_SESSION_ID: 'sesn_env',
  ANTHROPIC_ENVIRONMENT_KEY: 'key_env',
  ANTHROPIC_WORK_SECRET: 'secret_env',
};

describe('claimedItemFrom', () => {
  it('takes every value from the variables when no option is given', () => {
    expect(claimedItemFrom({}, undefined, ENV)).toEqual({
      work: { id: 'work_env', environment_id: 'env_env', data: { type: 'session', id: 'sesn_env' }, secret: 'secret_env' },
      environmentKey: 'key_env',
    });
  });

  it('an option wins over its variable; the worker\'s key over the variable, the option\'s over both', () => {
    const item = claimedItemFrom({ workId: 'w', environmentId: 'e', sessionId: 's', workSecret: 'x' }, 'key_worker', ENV);
    expect(item.work).toEqual({ id: 'w', environment_id: 'e', data: { type: 'session', id: 's' }, secret: 'x' });
    expect(item.environmentKey).toBe('key_worker');
    expect(claimedItemFrom({ environmentKey: 'key_opt' }, 'key_worker', ENV).environmentKey).toBe('key_opt');
  });

  it('an empty option or variable counts as absent', () => {
    expect(claimedItemFrom({ workId: '' }, '', ENV).work.id).toBe('work_env');
    expect(claimedItemFrom({}, '', ENV).environmentKey).toBe('key_env');
    expect(claimedItemFrom({}, undefined, { ...ENV, ANTHROPIC_WORK_SECRET: '' }).work.secret).toBeNull();
  });

  it.each([
    ['ANTHROPIC_WORK_ID', 'workId'],
    ['ANTHROPIC_ENVIRONMENT_ID', 'environmentId'],
    ['ANTHROPIC_SESSION_ID', 'sessionId'],
  ])('without %s: a MemoryConfigError naming %s', (variable, option) => {
    const env: Record<string, string | undefined> = { ...ENV, [variable]: undefined };
    expect(() => claimedItemFrom({}, undefined, env)).toThrow(expect.objectContaining({ name: 'MemoryConfigError', option }));
  });

  it('a key is needed only when there is no secret', () => {
    const noKey = { ...ENV, ANTHROPIC_ENVIRONMENT_KEY: undefined };
    expect(claimedItemFrom({}, undefined, noKey).environmentKey).toBeUndefined();
    expect(() => claimedItemFrom({}, undefined, { ...noKey, ANTHROPIC_WORK_SECRET: undefined })).toThrow(
      expect.objectContaining({ option: 'environmentKey' }),
    );
  });
});
