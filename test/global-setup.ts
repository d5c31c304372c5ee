/**
 * A scratch folder for the whole test run, shared by the test files of every
 * worker (what they share there: helpers/demo.ts), and removed at the end.
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
  const folder = await mkdtemp(join(tmpdir(), 'road-etl-shared-'));
  project.provide('sharedFolder', folder);
  return () => rm(folder, { recursive: true, force: true });
}
