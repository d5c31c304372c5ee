/**
 * A scratch folder for each run of the tests, shared by the test files of
 * every worker (what they share there: helpers/demo.ts), and removed at the
 * end. In watch mode each rerun has a new one: nothing of the last run's
 * code is reused.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The test run's shared scratch folder. */
    sharedFolder: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const folders: string[] = [];
  const fresh = async (): Promise<void> => {
    const folder = await mkdtemp(join(tmpdir(), 'road-etl-shared-'));
    folders.push(folder);
    project.provide('sharedFolder', folder);
  };
  await fresh();
  project.onTestsRerun(fresh);
  return async () => {
    await Promise.all(folders.map((folder) => rm(folder, { recursive: true, force: true })));
  };
}
