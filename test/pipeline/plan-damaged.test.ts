/**
 * A damaged checkpoint, or a state file that is not JSON, held in the
 * folder's commit: `plan`, `run --dry-run` and `run` fail alike, exit 1 with
 * the same words naming the step and its repair; the run lands no data (a
 * failed run records its failure in the manifest, as any does).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli } from '../helpers/cli.js';
import { useSimulator } from '../helpers/simulator.js';
import { testDir } from '../helpers/tmp.js';

const simulator = await useSimulator({
  seed: 12,
  now: '2026-11-15T00:00:00Z',
  signs: { signs: 200 },
});
const SIGNS = join(ROOT, 'pipelines', 'traffic-signs.yaml');

describe('a damaged checkpoint', () => {
  it.each([
    ['a checkpoint of another shape', JSON.stringify({ status: 'succeeded', checkpoint: { version: 99 } }), /The checkpoint of signs_events is damaged/],
    ['a state file that is not JSON', '{"status": "succ', /state file .*signs_events\.json is damaged/],
  ])('%s: plan, --dry-run and run fail alike, and the run lands no data', async (_name, text, words) => {
    const env = { ...simulator.env };
    const output = join(await testDir(), 'output');
    const first = await runCli(['run', SIGNS, '--output', output], { env });
    expect(first.code, first.stderr).toBe(0);
    const commitFile = join(output, '.state', 'commit.json');
    const commit = JSON.parse(await readFile(commitFile, 'utf8')) as { state: Record<string, string> };
    commit.state['.state/signs_events.json'] = text;
    await writeFile(commitFile, JSON.stringify(commit));
    const data = async () => {
      const { files } = JSON.parse(await readFile(commitFile, 'utf8')) as {
        files: Record<string, { key: string }>;
      };
      return Object.entries(files).filter(([path]) => path.endsWith('.parquet'));
    };
    const before = await data();

    for (const args of [
      ['plan', SIGNS, '--output', output],
      ['run', SIGNS, '--output', output, '--dry-run'],
      ['run', SIGNS, '--output', output],
    ]) {
      const result = await runCli(args, { env });
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(1);
      expect(result.stderr, args.join(' ')).toMatch(words);
      expect(result.stderr, args.join(' ')).toContain('--reset signs_events');
    }
    expect(await data()).toEqual(before);
  }, 120_000); // prettier-ignore
});
