/**
 * Text that reaches a person's terminal or log viewer: file names come from the agent and the
 * store, and a name may hold anything but `/` and NUL. Written raw, ESC/CSI/OSC sequences in a
 * name retitle the terminal or erase lines, CR and LF forge lines of their own (`deleted /a.md`),
 * and bidi controls or U+2028 reorder or split what is shown. So every path shown to a person
 * goes through `escapeForTerminal` (CLI text, log lines, error messages); JSON output keeps its
 * own escaping and is not touched.
 */

/**
 * What is made visible: C0 and C1 controls and DEL (`\p{Cc}`), format characters (`\p{Cf}`:
 * bidi embeddings, overrides and isolates, zero-width characters, the BOM), the line and
 * paragraph separators (`\p{Zl}`, `\p{Zp}`), and lone surrogates (`\p{Cs}`).
 */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu;

/** What `escapeForTerminal` rewrites: the unsafe characters, and the backslash that starts an escape. */
const ESCAPED = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\\]/gu;

const NAMED: Record<string, string> = { '\t': '\\t', '\n': '\\n', '\r': '\\r', '\\': '\\\\' };

/**
 * `text` with every control, format and separator character written as a visible escape: `\n`,
 * `\r`, `\t`, `\xhh` below U+0100, `\u{hhhh}` above; a backslash is doubled, so an escape shown
 * is never a name's own text (`a\x1b` typed in a name shows as `a\\x1b`). Everything else
 * (letters of any script, emoji, spaces) is left as it is, so an ordinary path reads the same.
 */
export function escapeForTerminal(text: string): string {
  return text.replace(ESCAPED, (ch) => {
    const named = NAMED[ch];
    if (named) return named;
    const code = ch.codePointAt(0)!;
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16)}}`;
  });
}

/**
 * JSON for a log line: `JSON.stringify`, then the characters it leaves raw that a terminal acts
 * on (DEL, C1 controls, format characters, U+2028/U+2029) as `\uHHHH` escapes. Still valid JSON,
 * with the same value.
 */
export function jsonForTerminal(value: unknown): string {
  return JSON.stringify(value).replace(UNSAFE, (ch) => {
    const code = ch.codePointAt(0)!;
    // JSON.stringify already escaped C0 controls and lone surrogates; what is left is one UTF-16 unit.
    return `\\u${code.toString(16).padStart(4, '0')}`;
  });
}
