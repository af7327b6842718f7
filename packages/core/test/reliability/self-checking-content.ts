import { createHash } from 'node:crypto';
/** The one seeded generator of the project's tests (the fuzz, the crash test, its children). */
export { seededRandom } from '@memory-mounter/testing';

/**
 * Memory contents that prove their own completeness, for the crash test: a header line with the
 * body's length and sha256, then the body. A file cut short, or two writes interleaved, fails
 * the check, whatever content it came from. Shared by the test and its child process.
 *
 *   mm-crash origin=agent id=17 len=40960 sha=<hex>\n<body>
 */
export type Origin = 'seed' | 'remote' | 'agent';

const HEADER = /^mm-crash origin=(seed|remote|agent) id=(\d+) len=(\d+) sha=([0-9a-f]{64})\n/;

export function selfCheckingContent(origin: Origin, id: number, length: number, random: () => number): string {
  let body = '';
  while (body.length < length) body += Math.floor(random() * 36 ** 6).toString(36).padStart(6, '0') + (random() < 0.1 ? '\n' : ' ');
  body = body.slice(0, length);
  return `mm-crash origin=${origin} id=${id} len=${length} sha=${sha256(body)}\n${body}`;
}

/** Why `text` is not a complete self-checking content, or null when it is. */
export function selfCheckProblem(text: string): string | null {
  const header = HEADER.exec(text);
  if (!header) return `no complete header (${text.length} bytes: ${JSON.stringify(text.slice(0, 40))}...)`;
  const body = text.slice(header[0].length);
  if (body.length !== Number(header[3])) return `body is ${body.length} characters, header says ${header[3]}`;
  if (sha256(body) !== header[4]) return 'body does not match its sha256';
  return null;
}


export function sha256(text: string | Uint8Array): string {
  return createHash('sha256').update(text).digest('hex');
}
