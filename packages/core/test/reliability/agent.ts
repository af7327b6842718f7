import { posix } from 'node:path';
import { MARKER_FILE, MAX_MEMORY_BYTES } from '@memory-mounter/core';
import type { HostDisk } from './host-disk.js';

/**
 * What an agent (or its shell) does to a mounted folder, as plain disk operations. The agent is
 * careless about sync but not malicious towards the host: it never writes through a symlink, so
 * that anything that changes outside the mounts is the engine's doing. An action that does not
 * apply (renaming a file that is not there, say) does nothing.
 *
 * Paths are wire paths (`/d/c.md`) under a store's host folder `root`.
 */
export type WriteKind = 'text' | 'binary' | 'oversize';
export type WipeKind = 'remove_folder' | 'files_only' | 'everything';
export type MarkerDamage = 'delete' | 'foreign' | 'garbage';

export class Agent {
  constructor(
    private readonly disk: HostDisk,
    /** Where the canary lives: the target of the links the agent plants. */
    private readonly outside: { file: string; dir: string },
  ) {}

  /** Creates or overwrites a file (mkdir -p on the way). `token` makes the content unique. */
  write(root: string, path: string, kind: WriteKind, token: string): boolean {
    const host = this.host(root, path);
    if (!this.clearWay(root, path) || !isNoneOr(this.disk.kindOf(host), 'file')) return false;
    this.disk.mkdir(posix.dirname(host));
    this.disk.writeFile(host, content(kind, token));
    return true;
  }

  /** Appends a line to an existing file. */
  edit(root: string, path: string, token: string): boolean {
    const host = this.host(root, path);
    if (!this.clearWay(root, path) || this.disk.kindOf(host) !== 'file') return false;
    this.disk.appendFile(host, `${token}\n`);
    return true;
  }

  /** rm of a file or a link. */
  delete(root: string, path: string): boolean {
    const host = this.host(root, path);
    const kind = this.disk.kindOf(host);
    if (!this.clearWay(root, path) || (kind !== 'file' && kind !== 'symlink')) return false;
    this.disk.remove(host);
    return true;
  }

  /** mv of a regular file onto a free name. */
  renameFile(root: string, from: string, to: string): boolean {
    return this.move(root, from, to, 'file');
  }

  mkdir(root: string, dir: string): boolean {
    if (!this.clearWay(root, `${dir}/x`)) return false;
    this.disk.mkdir(this.host(root, dir));
    return true;
  }

  /** rm -rf of a folder (links inside are removed, not followed). */
  removeDir(root: string, dir: string): boolean {
    const host = this.host(root, dir);
    if (!this.clearWay(root, dir) || this.disk.kindOf(host) !== 'directory') return false;
    this.disk.remove(host);
    return true;
  }

  /** mv of a folder onto a free name. */
  renameDir(root: string, from: string, to: string): boolean {
    if (to === from || to.startsWith(`${from}/`)) return false;
    return this.move(root, from, to, 'directory');
  }

  /** ln -s to the canary file (`file`) or the canary folder (`dir`), where nothing is yet. */
  linkOutside(root: string, path: string, to: 'file' | 'dir'): boolean {
    const host = this.host(root, path);
    if (!this.clearWay(root, path) || this.disk.kindOf(host) !== null) return false;
    this.disk.mkdir(posix.dirname(host));
    this.disk.symlink(to === 'file' ? this.outside.file : this.outside.dir, host);
    return true;
  }

  /**
   * Someone empties the folder: `remove_folder` removes it whole, `files_only` removes every
   * entry but the marker, `everything` removes every entry, marker included.
   */
  wipe(root: string, how: WipeKind): boolean {
    if (this.disk.kindOf(root) !== 'directory') return false;
    if (how === 'remove_folder') {
      this.disk.remove(root);
      return true;
    }
    for (const [rel] of this.disk.tree(root)) {
      if (rel.split('/').length !== 2) continue; // top-level entries only
      if (how === 'files_only' && rel === `/${MARKER_FILE}`) continue;
      this.disk.remove(posix.join(root, rel));
    }
    return true;
  }

  /** Deletes the marker, or writes another store's id or garbage into it. */
  damageMarker(root: string, how: MarkerDamage): boolean {
    if (this.disk.kindOf(root) !== 'directory') return false;
    const marker = posix.join(root, MARKER_FILE);
    if (!isNoneOr(this.disk.kindOf(marker), 'file')) return false;
    if (how === 'delete') this.disk.remove(marker);
    else if (how === 'foreign') this.disk.writeFile(marker, `${JSON.stringify({ memory_store_id: 'memstore_someone_else' })}\n`);
    else this.disk.writeFile(marker, 'not json at all');
    return true;
  }

  private move(root: string, from: string, to: string, kind: 'file' | 'directory'): boolean {
    const source = this.host(root, from);
    const target = this.host(root, to);
    if (!this.clearWay(root, from) || !this.clearWay(root, to)) return false;
    if (this.disk.kindOf(source) !== kind || this.disk.kindOf(target) !== null) return false;
    this.disk.mkdir(posix.dirname(target));
    this.disk.rename(source, target);
    return true;
  }

  /** True when every folder above `path` is a real folder or absent: no link, no file. */
  private clearWay(root: string, path: string): boolean {
    if (this.disk.kindOf(root) !== 'directory') return false;
    const segments = path.split('/').filter(Boolean);
    let dir = root;
    for (const segment of segments.slice(0, -1)) {
      dir = posix.join(dir, segment);
      const kind = this.disk.kindOf(dir);
      if (kind === null) return true;
      if (kind !== 'directory') return false;
    }
    return true;
  }

  private host(root: string, path: string): string {
    return posix.join(root, path);
  }
}

function isNoneOr(kind: string | null, allowed: string): boolean {
  return kind === null || kind === allowed;
}

function content(kind: WriteKind, token: string): Uint8Array | string {
  switch (kind) {
    case 'text':
      return `${token}\n`;
    case 'binary':
      // 0xff never occurs in UTF-8: not text, so never pushable.
      return new Uint8Array([0xff, 0xfe, 0x00, ...new TextEncoder().encode(token)]);
    case 'oversize':
      return `${token}\n${'x'.repeat(MAX_MEMORY_BYTES)}`;
  }
}
