import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { removeTemporaryFiles, temporaryPath } from '../../src/util/fs.js';
import { testDir } from '../helpers/tmp.js';

describe('the temporary files of a failed step', () => {
  it('are removed with the scratch files of their writers (a GeoJSON features file, FlatGeobuf buckets), and nothing else', async () => {
    const output = await testDir();
    const scratch = join(output, '.state', 'tmp');
    const geojson = temporaryPath(join(output, 'exports', 'signs_live.geojson'), scratch);
    const fgb = temporaryPath(join(output, 'exports', 'signs_live.fgb'), scratch);
    const left = [geojson, `${geojson}.features`, fgb, `${fgb}.bucket-0`, `${fgb}.bucket-17`];
    // What is not a writer's: a dataset's files, an extract, a hidden file of another kind.
    const kept = [
      join(
        output,
        'signs',
        'live_snapshots',
        'snapshot_date=2026-11-26',
        'signs_live-20261126T060000000Z.parquet',
      ),
      join(output, 'exports', 'signs_live.fgb'),
      join(output, 'exports', '.hidden.fgb'),
      join(scratch, '.signs_live.fgb.tmp-12-nothex00.bucket-1'),
      join(scratch, 'signs_live.fgb.tmp-12-abcdef12.bucket-1'),
    ];
    for (const path of [...left, ...kept]) {
      await mkdir(join(path, '..'), { recursive: true });
      await writeFile(path, 'x');
    }
    const removed = await removeTemporaryFiles(output);
    expect(removed.sort()).toEqual([...left].sort());
    const after = await readdir(output, { recursive: true, withFileTypes: true });
    const files = after.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
    expect(files.sort()).toEqual([...kept].sort());
  });
});
