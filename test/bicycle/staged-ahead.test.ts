import { readFile, readdir, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createMemoryLogger } from '../../src/log.js';
import {
  adoptStagedAhead,
  emptyMeasurementsCheckpoint,
  startingCheckpoint,
  type MeasurementsCheckpoint,
} from '../../src/sources/bicycle/checkpoint.js';
import { testDir } from '../helpers/tmp.js';

const batch = (file: string, from: number) => ({
  from,
  to: from + 3_600_000,
  ids: ['A', 'B'],
  file,
  rows: 2,
  quarantined: 0,
});

/** A folder fetched ahead: two staged batch files and the checkpoint that lists them. */
async function fetchedAhead(
  key: string,
): Promise<{ staging: string; checkpoint: MeasurementsCheckpoint }> {
  const staging = join(await testDir(), 'ahead');
  await mkdir(staging, { recursive: true });
  await writeFile(join(staging, 'b1.parquet'), 'first');
  await writeFile(join(staging, 'b2.parquet'), 'second');
  return {
    staging,
    checkpoint: {
      version: 1,
      limits: {
        locations: { max_ok: 8, min_fail: null },
        period_hours: { max_ok: null, min_fail: 200 },
      },
      run: {
        key,
        start: 's',
        end: 'e',
        batches: [batch('b1.parquet', 0), batch('b2.parquet', 3_600_000)],
      },
    },
  };
}

describe('batches fetched ahead by a run that waited for the folder', () => {
  it('are taken up when they are the run’s work: their files moved into the step’s staging, the limits both learned kept', async () => {
    const ahead = await fetchedAhead('K');
    const staging = join(await testDir(), 'staging');
    const log = createMemoryLogger();
    const folder: MeasurementsCheckpoint = {
      ...emptyMeasurementsCheckpoint(),
      limits: {
        locations: { max_ok: 4, min_fail: 16 },
        period_hours: { max_ok: 48, min_fail: null },
      },
    };
    const started = await adoptStagedAhead(folder, ahead, { staging, key: 'K', log });
    expect(started.run).toEqual(ahead.checkpoint.run);
    expect(started.limits).toEqual({
      locations: { max_ok: 8, min_fail: 16 },
      period_hours: { max_ok: 48, min_fail: 200 },
    });
    expect((await readdir(staging)).sort()).toEqual(['b1.parquet', 'b2.parquet']);
    expect(await readFile(join(staging, 'b2.parquet'), 'utf8')).toBe('second');
    expect(await readdir(ahead.staging)).toEqual([]);
    expect(log.events.map((e) => e.event)).toContain('bicycle.adopted');
  });

  it('are left when the run’s work differs (another period, selection or catalog), or the folder has an unfinished run of the same work', async () => {
    const log = createMemoryLogger();
    const ahead = await fetchedAhead('K');
    const staging = join(await testDir(), 'staging');
    const other = await adoptStagedAhead(emptyMeasurementsCheckpoint(), ahead, {
      staging,
      key: 'L',
      log,
    });
    expect(other.run).toBeNull();
    expect(other.limits).toEqual(ahead.checkpoint.limits);
    const unfinished: MeasurementsCheckpoint = {
      ...emptyMeasurementsCheckpoint(),
      run: { key: 'K', start: 's', end: 'e', batches: [batch('b9.parquet', 0)] },
    };
    const same = await adoptStagedAhead(unfinished, ahead, { staging, key: 'K', log });
    expect(same.run).toEqual(unfinished.run);
    expect((await readdir(ahead.staging)).sort()).toEqual(['b1.parquet', 'b2.parquet']);
    expect(log.events).toEqual([]);
  });

  it('keep the later run’s limits where the two runs disagree (the service changed its limit)', async () => {
    const ahead = await fetchedAhead('K');
    const folder: MeasurementsCheckpoint = {
      ...emptyMeasurementsCheckpoint(),
      limits: {
        locations: { max_ok: null, min_fail: 6 },
        period_hours: { max_ok: null, min_fail: null },
      },
    };
    const log = createMemoryLogger();
    const started = await adoptStagedAhead(folder, ahead, {
      staging: await testDir(),
      key: 'X',
      log,
    });
    expect(started.limits.locations).toEqual({ max_ok: 8, min_fail: null });
  });

  it('are not where a run fetching ahead starts: it starts from the folder’s limits alone', async () => {
    const folder: MeasurementsCheckpoint = {
      ...emptyMeasurementsCheckpoint(),
      run: { key: 'K', start: 's', end: 'e', batches: [batch('b9.parquet', 0)] },
    };
    const log = createMemoryLogger();
    const started = await startingCheckpoint(
      folder,
      { mode: 'stage' },
      { staging: '', key: 'K', log },
    );
    expect(started).toEqual({ ...folder, run: null });
    // A checkpoint fetched ahead that does not fit is not taken up.
    const unfit = await startingCheckpoint(
      folder,
      { mode: 'adopt', staging: '', checkpoint: { version: 7 } },
      { staging: '', key: 'K', log },
    );
    expect(unfit).toBe(folder);
  });
});
