/**
 * Collects every way the run differs from the script, instead of stopping at the first: a
 * reader fixing the demo wants the whole list.
 */
export class Expectations {
  readonly mismatches: string[] = [];

  that(ok: boolean, what: string): boolean {
    if (!ok) this.mismatches.push(what);
    return ok;
  }

  includes(list: readonly string[], item: string, what: string): boolean {
    return this.that(list.includes(item), `${what}: expected ${item} in [${list.join(', ')}]`);
  }

  /** Path-by-path comparison of two `{ path: content }` maps. */
  sameMemories(actual: Record<string, string>, expected: Record<string, string>, what: string): boolean {
    const before = this.mismatches.length;
    for (const [path, content] of Object.entries(expected)) {
      if (!(path in actual)) this.mismatches.push(`${what}: ${path} is missing`);
      else if (actual[path] !== content) {
        this.mismatches.push(`${what}: ${path} holds ${JSON.stringify(actual[path])}, expected ${JSON.stringify(content)}`);
      }
    }
    for (const path of Object.keys(actual)) {
      if (!(path in expected)) this.mismatches.push(`${what}: ${path} should not be there`);
    }
    return this.mismatches.length === before;
  }
}
