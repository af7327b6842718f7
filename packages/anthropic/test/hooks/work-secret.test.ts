import { describe, expect, it } from 'vitest';
import { sessionsTokenFromSecret } from '@memory-mounter/anthropic';

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const urlSafe = (text: string) => b64(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

describe('sessionsTokenFromSecret', () => {
  // '>>>?' encodes to '+' and '/' characters in standard base64: the URL-safe form differs.
  const payload = JSON.stringify({ sessions_token: 'sk-sess>>>?', other: 1 });

  it('reads standard base64, with and without padding', () => {
    expect(sessionsTokenFromSecret(b64(payload))).toBe('sk-sess>>>?');
    expect(sessionsTokenFromSecret(b64(payload).replace(/=+$/, ''))).toBe('sk-sess>>>?');
  });

  it('reads URL-safe base64 without padding', () => {
    expect(urlSafe(payload)).toMatch(/[-_]/);
    expect(sessionsTokenFromSecret(urlSafe(payload))).toBe('sk-sess>>>?');
  });

  it.each([
    ['absent', undefined],
    ['null', null],
    ['empty', ''],
    ['not base64', '%%%not-base64%%%'],
    ['base64 of non-JSON', b64('hello')],
    ['a JSON array', b64('["sessions_token"]')],
    ['a JSON string', b64('"sessions_token"')],
    ['no token', b64('{"other":"x"}')],
    ['an empty token', b64('{"sessions_token":""}')],
    ['a non-string token', b64('{"sessions_token":42}')],
    ['JSON null', b64('null')],
  ])('%s is null, never a throw', (_, secret) => {
    expect(sessionsTokenFromSecret(secret as string | null | undefined)).toBeNull();
  });
});
