/**
 * Repairs of the traffic-sign datasets. A cut file of the v1 event feed: the
 * printed repair removes it and reads the feed again over its month, so the
 * folder ends equal to one run (the events, and the current state built from
 * them). A snapshot of the live API, whose moment NDW no longer serves: the
 * plan and the run say what the repair loses before it removes it.
 */
import { stat, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { committed, committedPaths } from '../helpers/committed.js';
import { ROOT, printedRepair, runCli } from '../helpers/cli.js';
import { useSimulator } from '../helpers/simulator.js';
import { datasetDifference, duck, testDir } from '../helpers/tmp.js';

const simulator = await useSimulator({
  seed: 57,
  now: '2026-11-15T00:00:00Z',
  signs: { signs: 400 },
});

const SIGNS = join(ROOT, 'pipelines', 'traffic-signs.yaml');
const LIVE = join(ROOT, 'pipelines', 'traffic-signs-live.yaml');

/** The events a file of signs/events holds (read before it is cut). */
async function eventsIn(file: string): Promise<number> {
  const [row] = await duck(`SELECT count(*) AS n FROM read_parquet('${file}')`);
  return Number(row!['n']);
}

describe('a repair of the traffic-sign datasets', () => {
  it('a cut file of the v1 feed: the printed repair reads its month again, and the folder equals one run', async () => {
    const env = { ...simulator.env };
    const output = join(await testDir(), 'output');
    const first = await runCli(['run', SIGNS, '--output', output], { env });
    expect(first.code, first.stderr).toBe(0);
    // The largest file of the feed's landed months.
    const files = committedPaths(output).filter((p) => p.startsWith('signs/events/'));
    const sizes = await Promise.all(files.map((p) => stat(committed(output, p))));
    const path = files[sizes.indexOf(sizes.reduce((a, b) => (b.size > a.size ? b : a)))]!;
    const held = await eventsIn(committed(output, path));
    expect(held).toBeGreaterThan(20);
    await truncate(committed(output, path), 100);

    const failed = await runCli(['run', SIGNS, '--output', output], { env });
    expect(failed.code).toBe(1);
    const repair = printedRepair(failed.stderr);
    expect(repair).toContain(path);
    const month = /publication_month=(\d{4}-\d{2})/.exec(path)![1]!;
    const planned = await runCli([...repair, '--dry-run'], { env });
    expect(planned.code, planned.stderr).toBe(0);
    expect(planned.stdout).toContain(`reads the feed again over ${month}`);
    const repaired = await runCli(repair, { env });
    expect(repaired.code, repaired.stderr).toBe(0);
    const landed = /Read the feed again over [\d-, ]+: (\d+) event\(s\)/.exec(repaired.stderr);
    expect(Number(landed?.[1])).toBe(held);

    const once = join(await testDir(), 'once');
    const whole = await runCli(['run', SIGNS, '--output', once], { env });
    expect(whole.code, whole.stderr).toBe(0);
    for (const dataset of ['signs/events', 'derived/signs_current_state'])
      expect(await datasetDifference(once, output, dataset), dataset).toBe(0);
    // And the nights after keep it so.
    const after = await runCli(['run', SIGNS, '--output', output], { env });
    expect(after.code, after.stderr).toBe(0);
    expect(await datasetDifference(once, output, 'signs/events')).toBe(0);
  }, 300_000);

  it('a snapshot of the live API: the plan and the run say what the repair loses before it removes it', async () => {
    const env = { ...simulator.env };
    const output = join(await testDir(), 'live');
    const first = await runCli(['run', LIVE, '--output', output], { env });
    expect(first.code, first.stderr).toBe(0);
    const path = committedPaths(output).find((p) => p.startsWith('signs/live_snapshots/'))!;
    const day = /snapshot_date=(\d{4}-\d{2}-\d{2})/.exec(path)![1]!;
    const args = ['run', LIVE, '--output', output, '--repair', path];

    const planned = await runCli([...args, '--dry-run'], { env });
    expect(planned.code, planned.stderr).toBe(0);
    expect(planned.stdout).toContain(
      `Removes ${path} first (--repair): it removes the snapshot(s) of ${day}`,
    );
    expect(planned.stdout).toContain('no step can fetch it again');
    const repaired = await runCli([...args, '--log-format', 'json'], { env });
    expect(repaired.code, repaired.stderr).toBe(0);
    const events = repaired.stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { event: string; level: string; message: string });
    const said = events.findIndex(
      (e) => e.level === 'warn' && e.message.includes('no step can fetch it again'),
    );
    const removed = events.findIndex((e) => e.message.startsWith('--repair: removed'));
    expect(said).toBeGreaterThanOrEqual(0);
    expect(removed).toBeGreaterThan(said);
    expect(events[removed]!.message).toContain('what it held is gone');
    expect(committedPaths(output)).not.toContain(path);
  }, 300_000);
});
