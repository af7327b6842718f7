import { notFound } from './api-error.js';

/** A skill the emulator serves: what `GET /v1/skills/{id}/versions/{version}[/content]` answer from. */
export interface SkillSeed {
  /** The skill's name; a worker names the folder it unpacks the skill into after it. */
  name: string;
  /** The files of the skill, by relative path (`SKILL.md`, `scripts/run.sh`): the archive's content. */
  files: Record<string, string>;
  description?: string;
}

/** A seeded skill version, as the emulator keeps it. */
interface SkillVersionRecord extends SkillSeed {
  id: string;
  skillId: string;
  createdAt: string;
}

/** `BetaSkillVersion` of the SDK: the fields a worker reads (`id`, `name`) and the rest it types. */
export interface SkillVersionWire {
  type: 'skill_version';
  id: string;
  skill_id: string;
  name: string;
  description: string;
  created_at: string;
}

/** The skill routes, by the names the counters use. */
export type SkillRouteName = 'skills.version' | 'skills.content';

export interface MatchedSkillRoute {
  route: SkillRouteName;
  skillId: string;
  /** A version id, or the alias `latest`. */
  version: string;
}

// /v1/skills/{skill_id}/versions/{version}[/content]
const SKILL_VERSION_PATH = /^\/v1\/skills\/([^/]+)\/versions\/([^/]+)(\/content)?\/?$/;

export function matchSkillRoute(method: string | undefined, pathname: string): MatchedSkillRoute | undefined {
  if (method !== 'GET') return undefined;
  const match = SKILL_VERSION_PATH.exec(pathname);
  if (!match) return undefined;
  const skillId = decode(match[1]!);
  const version = decode(match[2]!);
  if (skillId === undefined || version === undefined) return undefined;
  return { route: match[3] === undefined ? 'skills.version' : 'skills.content', skillId, version };
}

/**
 * The skills a test seeded, each version kept; `latest` is the newest. A session lists a skill
 * on its agent (`SessionSeed.skills`); a worker resolves the version, then downloads its
 * archive, a POSIX tar of the seeded files wrapped in one folder named after the skill (the
 * shape the service's bundles have).
 */
export class SkillRegistry {
  readonly #versions = new Map<string, SkillVersionRecord[]>();
  readonly #newId: (prefix: string) => string;
  readonly #now: () => string;

  constructor(env: { newId: (prefix: string) => string; now: () => string }) {
    this.#newId = env.newId;
    this.#now = env.now;
  }

  /** Adds a version of `skillId`; returns its id. */
  add(skillId: string, seed: SkillSeed): string {
    const record: SkillVersionRecord = { ...seed, files: { ...seed.files }, id: this.#newId('skillver'), skillId, createdAt: this.#now() };
    this.#versions.set(skillId, [...(this.#versions.get(skillId) ?? []), record]);
    return record.id;
  }

  version(skillId: string, version: string): SkillVersionWire {
    const record = this.#find(skillId, version);
    return {
      type: 'skill_version',
      id: record.id,
      skill_id: record.skillId,
      name: record.name,
      description: record.description ?? '',
      created_at: record.createdAt,
    };
  }

  /** The version's archive: `<name>/<path>` for each seeded file. */
  archive(skillId: string, version: string): Buffer {
    const record = this.#find(skillId, version);
    const top = record.name.replace(/[^A-Za-z0-9._-]/g, '-') || 'skill';
    return tarArchive(Object.entries(record.files).map(([path, content]) => ({ path: `${top}/${path}`, content })));
  }

  #find(skillId: string, version: string): SkillVersionRecord {
    const versions = this.#versions.get(skillId) ?? [];
    const record = version === 'latest' ? versions.at(-1) : versions.find((v) => v.id === version);
    if (!record) throw notFound(`skill ${skillId} has no version ${version}`);
    return record;
  }
}

const BLOCK = 512;

/**
 * A POSIX ustar archive of regular files (mode 0644), which `tar -xf` reads. Paths must fit the
 * 100-byte name field: skills seeded by tests are short.
 */
export function tarArchive(entries: readonly { path: string; content: string }[]): Buffer {
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    const data = Buffer.from(entry.content, 'utf8');
    const header = Buffer.alloc(BLOCK);
    const name = Buffer.from(entry.path, 'utf8');
    if (name.length > 100) throw new RangeError(`tar entry path over 100 bytes: ${entry.path}`);
    name.copy(header, 0);
    header.write('0000644\0', 100, 'ascii'); // mode
    header.write('0000000\0', 108, 'ascii'); // uid
    header.write('0000000\0', 116, 'ascii'); // gid
    header.write(`${data.length.toString(8).padStart(11, '0')}\0`, 124, 'ascii'); // size
    header.write(`${Math.floor(Date.now() / 1000).toString(8).padStart(11, '0')}\0`, 136, 'ascii'); // mtime
    header.write('        ', 148, 'ascii'); // checksum, spaces while it is summed
    header.write('0', 156, 'ascii'); // typeflag: regular file
    header.write('ustar\0', 257, 'ascii');
    header.write('00', 263, 'ascii');
    let sum = 0;
    for (const byte of header) sum += byte;
    header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
    blocks.push(header, data, Buffer.alloc((BLOCK - (data.length % BLOCK)) % BLOCK));
  }
  // Two zero blocks end the archive.
  blocks.push(Buffer.alloc(BLOCK * 2));
  return Buffer.concat(blocks);
}

function decode(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
