/**
 * Checkpoints under <output>/.state, one JSON file per step, always written
 * atomically and only after the data they describe (the folder's lock is the
 * store's: store/folder-lock.ts).
 */
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { StateError } from '../errors.js';
import { STATE_FOLDER, scratchFolder } from '../layout.js';
import { writeFileAtomic } from '../util/fs.js';

export interface StepRecord {
  /** How the step's last run ended. */
  status: 'succeeded' | 'failed' | 'running';
  finished_at: string | undefined;
  /** The step's own checkpoint (offsets, finished units, learned limits). */
  checkpoint: Record<string, unknown>;
  /** What identifies the data of the upstream the step last read (see UpstreamIdentityHooks). */
  upstream?: { url: string } & Record<string, unknown>;
}

export class StateStore {
  readonly folder: string;
  readonly #scratch: string;

  constructor(output: string) {
    this.folder = join(output, STATE_FOLDER);
    this.#scratch = scratchFolder(output);
  }

  #file(stepId: string): string {
    return join(this.folder, `${stepId}.json`);
  }

  async read(stepId: string): Promise<StepRecord | undefined> {
    const file = this.#file(stepId);
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new StateError(`Cannot read the state file ${file}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    try {
      const record = JSON.parse(text) as unknown;
      if (
        typeof record !== 'object' ||
        record === null ||
        typeof (record as Partial<StepRecord>).checkpoint !== 'object'
      ) {
        throw new Error('not a step record');
      }
      return record as StepRecord;
    } catch (error) {
      throw new StateError(
        `The state file ${file} is damaged (${(error as Error).message}); restore it from a copy of the folder; or start the step over with --reset ${stepId}, which first removes the data the step landed`,
        { cause: error },
      );
    }
  }

  async write(stepId: string, record: StepRecord): Promise<void> {
    await writeFileAtomic(
      this.#file(stepId),
      JSON.stringify(record, null, 2) + '\n',
      this.#scratch,
    );
  }

  async remove(stepId: string): Promise<void> {
    await rm(this.#file(stepId), { force: true });
  }

  step(stepId: string, initial: StepRecord | undefined): StepState {
    return new StepState(this, stepId, initial);
  }
}

/** One step's checkpoint, as the step sees it. */
export class StepState {
  readonly #store: StateStore;
  readonly #stepId: string;
  #record: StepRecord;

  constructor(store: StateStore, stepId: string, initial: StepRecord | undefined) {
    this.#store = store;
    this.#stepId = stepId;
    this.#record = initial ?? { status: 'running', finished_at: undefined, checkpoint: {} };
  }

  get checkpoint(): Record<string, unknown> {
    return this.#record.checkpoint;
  }

  /** Saves a new checkpoint atomically. Call only after the data it describes is durable. */
  async save(checkpoint: Record<string, unknown>): Promise<void> {
    this.#record = { ...this.#record, checkpoint };
    await this.#store.write(this.#stepId, this.#record);
  }

  /** Records what identifies the upstream's data; written with the next save or finish. */
  identify(upstream: StepRecord['upstream']): void {
    const record = { ...this.#record };
    delete record.upstream;
    this.#record = upstream ? { ...record, upstream } : record;
  }

  async finish(status: StepRecord['status']): Promise<void> {
    this.#record = { ...this.#record, status, finished_at: new Date().toISOString() };
    await this.#store.write(this.#stepId, this.#record);
  }
}
