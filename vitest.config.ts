import { accessSync, constants, statfsSync } from 'node:fs';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The tests' scratch folders go to a RAM disk when the machine has one with
 * room (`/dev/shm`, 2 GB free or more) and `TMPDIR` is not set: the suite writes
 * and removes tens of thousands of small files, which on a disk-backed file
 * system costs about a third of its time in the kernel (the suite takes about
 * 5 minutes instead of 6.5 on the 2-core machine). A `TMPDIR` of your own is
 * kept.
 */
function scratchFolder(): string | undefined {
  if (process.env['TMPDIR']) return undefined;
  try {
    accessSync('/dev/shm', constants.W_OK);
    const disk = statfsSync('/dev/shm');
    return disk.bavail * disk.bsize >= 2 * 1024 ** 3 ? '/dev/shm' : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The test files that take longest, longest first (seconds in a whole run on
 * the 2-core machine: 150, 135, 110, 105, 95, 95, 90, 70, 60, 60, 60, 55, 50,
 * 50, 45, 45). Vitest orders files by their last duration when it has one, and
 * else by size: on a fresh clone some small but long files came last, and the
 * run ended on one or two of them with the other workers idle.
 */
const LONGEST = [
  'store/store-runs',
  'reliability/landed-data',
  'bicycle/quality',
  'store/commit-boundaries',
  'pipeline/nightly',
  'reliability/live-trust',
  'bicycle/measurements',
  'reliability/upstream-lasting',
  'reliability/upstream-passing',
  'pipeline/nightly-signs',
  'store/store-owned',
  'pipeline/plan-is-run',
  'report/report',
  'signs/events',
  'reliability/local-trouble',
  'pipeline/plan',
].map((name) => `/test/${name}.test.ts`);

/** The longest files first, then the others in Vitest's own order. */
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification): number => {
      const at = LONGEST.findIndex((name) => file.moduleId.endsWith(name));
      return at < 0 ? LONGEST.length : at;
    };
    const sorted = await super.sort(files);
    return sorted
      .map((file, index) => ({ file, index }))
      .sort((a, b) => rank(a.file) - rank(b.file) || a.index - b.index)
      .map(({ file }) => file);
  }
}

const scratch = scratchFolder();
// Set here too, so that every process the tests start inherits it.
if (scratch) process.env['TMPDIR'] = scratch;

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // A scratch folder for the whole run: the demo's output, run once for the files that read it.
    globalSetup: ['test/global-setup.ts'],
    // Many tests wait on child processes, simulated latency and backoff: three test
    // files at a time keep two cores busy (one file per core leaves them idle about
    // a third of the time). The timeouts are safety nets for a loaded machine, not
    // limits any test is meant to approach.
    maxWorkers: 3,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    sequence: { sequencer: LongestFirst },
    // A worker imports the code once for all the files it runs, not once per file
    // (about 15 s less on two cores). The code's one process-wide state, the
    // secrets kept out of its output, starts empty with each command (main).
    isolate: false,
    env: scratch ? { TMPDIR: scratch } : {},
  },
});
