/**
 * The script's words: what the stores start with and what each writer puts in them. Paths are
 * relative to the store's demo prefix (see backends.ts).
 */

export const TEAM_NOTES_SEED: Record<string, string> = {
  '/README.md': '# Team notes\nShared memory of the platform team. One topic per file.\n',
  '/people/oncall.md': '# On call\nThis week: Priya.\n',
  '/projects/alpha/plan.md': '# Alpha plan\n1. Ship the importer.\n',
  '/projects/alpha/decisions.md': '# Alpha decisions\n- Postgres, not SQLite.\n',
  '/scratch/old-idea.md': 'Rewrite everything in a weekend?\n',
};

export const STYLE_GUIDE_SEED: Record<string, string> = {
  '/tone.md': 'Plain words. Short sentences. No exclamation marks.\n',
  '/formatting/markdown.md': 'Sentence-case headings; one blank line between blocks.\n',
};

export const KICKOFF_NOTE = '# Beta kickoff\nOwner: the agent. First step: read the Alpha decisions.\n';
export const KICKOFF_NOTE_FINAL = `${KICKOFF_NOTE}Status: kickoff held; next review in two weeks.\n`;
export const PLAN_EDITED = `${TEAM_NOTES_SEED['/projects/alpha/plan.md']}2. Migrate the old exports.\n`;
export const ONCALL_BY_OTHER = '# On call\nThis week: Sam (swapped with Priya).\n';
export const DECISIONS_BY_AGENT = `${TEAM_NOTES_SEED['/projects/alpha/decisions.md']}- Nightly backups (agent).\n`;
export const DECISIONS_BY_OTHER = `${TEAM_NOTES_SEED['/projects/alpha/decisions.md']}- Hourly backups (decided in review).\n`;
