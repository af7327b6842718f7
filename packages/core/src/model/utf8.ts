// `ignoreBOM: true` keeps a leading BOM in the decoded text: dropping it would change the bytes,
// and the file would then never match the sha of what was pushed.
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const encoder = new TextEncoder();

/** The text of UTF-8 bytes, or `null` when they are not valid UTF-8. Round-trips byte for byte. */
export function decodeUtf8(bytes: Uint8Array): string | null {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return null;
  }
}

export function encodeUtf8(text: string): Uint8Array {
  return encoder.encode(text);
}
