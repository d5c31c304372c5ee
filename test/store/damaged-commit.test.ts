/**
 * A commit that fails its own check (its list of files emptied or edited, the
 * document cut, one object named for two files) is damaged: `run` and `plan`
 * stop with exit 1 naming it and the repair, and write nothing.
 */
import { createHash } from 'node:crypto';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { filesDigest } from '../../src/store/commit.js';
import { ROOT, runCli } from '../helpers/cli.js';
import { useSimulator } from '../helpers/simulator.js';
import { testDir } from '../helpers/tmp.js';

const simulator = await useSimulator({
  seed: 27,
  now: '2026-11-15T00:00:00Z',
  bicycle: { locations: 8 },
});

const night = (output: string, day: number) => [
  'run', join(ROOT, 'pipelines', 'bicycle.yaml'), '--output', output,
  '--param', `start=2026-10-1${day}T00:00:00Z`, '--param', `end=2026-10-1${day + 1}T00:00:00Z`,
  '--param', 'prefixes=UTR',
]; // prettier-ignore

/** Every file below the folder, .state included, with the hash of its bytes. */
async function everyFile(output: string): Promise<string[]> {
  const entries = await readdir(output, { recursive: true, withFileTypes: true });
  const files = entries.filter((entry) => entry.isFile());
  return Promise.all(
    files.map(async (entry) => {
      const path = join(entry.parentPath, entry.name);
      const hash = createHash('sha256')
        .update(await readFile(path))
        .digest('hex');
      return `${relative(output, path)} ${hash}`;
    }),
  ).then((lines) => lines.sort());
}

type Commit = { files: Record<string, { key: string }>; [more: string]: unknown };

const DAMAGES: [string, (text: string) => string, RegExp][] = [
  [
    'its list of files emptied',
    (text) => JSON.stringify({ ...(JSON.parse(text) as Commit), files: {} }),
    /is damaged \(its list of files is not the one it was written with \(0 file\(s\) named, \d+ written\)\)/,
  ],
  [
    'one file taken out of its list',
    (text) => {
      const commit = JSON.parse(text) as Commit;
      const [first] = Object.keys(commit.files).filter((path) => path.endsWith('.parquet'));
      const files = Object.fromEntries(Object.entries(commit.files).filter(([p]) => p !== first));
      return JSON.stringify({ ...commit, files });
    },
    /is damaged \(its list of files is not the one it was written with/,
  ],
  ['cut', (text) => text.slice(0, Math.floor(text.length / 2)), /is damaged \(\d+ bytes, not JSON/],
  [
    'one object named for two files',
    (text) => {
      const commit = JSON.parse(text) as Commit;
      const [a, b] = Object.keys(commit.files).filter((path) => path.endsWith('.parquet'));
      commit.files[b!] = { ...commit.files[b!]!, key: commit.files[a!]!.key };
      return JSON.stringify(commit);
    },
    // (the edit changes the list, which its hash tells first)
    /is damaged \(its list of files is not the one it was written with/,
  ],
  [
    'one object named for two files, its hash made again to match',
    (text) => {
      const commit = JSON.parse(text) as Commit & Parameters<typeof filesDigest>[0];
      const files = commit.files as Parameters<typeof filesDigest>[0];
      const [a, b] = Object.keys(files).filter((path) => path.endsWith('.parquet'));
      files[b!] = { ...files[b!]!, key: files[a!]!.key };
      return JSON.stringify({ ...commit, files_sha256: filesDigest(files) });
    },
    /is damaged \(it names the object \S+ for two files/,
  ],
];

describe('a damaged commit', () => {
  it.each(DAMAGES)(
    '%s: run and plan exit 1 naming it and the repair, and write nothing',
    async (_name, damage, said) => {
      const output = join(await testDir(), 'output');
      const first = await runCli(night(output, 0), { env: { ...simulator.env } });
      expect(first.code, first.stderr).toBe(0);
      const commit = join(output, '.state', 'commit.json');
      await writeFile(commit, damage(await readFile(commit, 'utf8')));
      const before = await everyFile(output);
      for (const argv of [
        night(output, 1),
        [...night(output, 1), '--dry-run'],
        ['plan', ...night(output, 1).slice(1)],
      ]) {
        const result = await runCli(argv, { env: { ...simulator.env } });
        expect(result.code, `${argv[0]!}: ${result.stderr}`).toBe(1);
        expect(result.stderr).toMatch(said);
        expect(result.stderr).toContain(`${output}/.state/commit.json`);
        expect(result.stderr).toMatch(/restore it from the store's versions \(or a backup\)/);
        expect(await everyFile(output)).toEqual(before);
      }
    },
  );
});
