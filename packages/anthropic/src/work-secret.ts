/**
 * The sessions token inside a work item's `secret`: base64 (standard or URL-safe, padding
 * optional) of a JSON object with a non-empty `sessions_token` string. Anything else (absent,
 * not base64, not JSON, not an object, no such field) is `null`.
 *
 * Never throws and never logs: the secret and the token are credentials.
 */
export function sessionsTokenFromSecret(secret: string | null | undefined): string | null {
  if (typeof secret !== 'string' || secret.trim() === '') return null;
  const compact = secret.trim();
  // Node's base64 decoder takes both alphabets and missing padding, but silently skips any
  // other character; refusing those first keeps a mangled secret from decoding to something.
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(compact)) return null;
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(compact, 'base64').toString('utf8'));
  } catch {
    return null;
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return null;
  const token = (payload as { sessions_token?: unknown }).sessions_token;
  return typeof token === 'string' && token.length > 0 ? token : null;
}
