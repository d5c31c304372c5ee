/**
 * A night on an output folder, from its store to its summary: the folder
 * opened (a local path, s3:// or az://), checked to be road-etl's, the lock
 * taken (waiting for another run where asked, fetching ahead meanwhile), the
 * last commit fetched into a local copy, the pipeline run there, what it did
 * put back as the next commit, the lock released and the copy removed. The
 * `run` command parses its arguments, calls runNight and prints the summary;
 * the commands that read a folder (and `report`, which writes its page) work
 * on a copy of its commit the same way (withFolder).
 */
import { existsSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { DISK, type FolderFiles } from '../duckdb/folder-files.js';
import { COMMIT_KEY, assertCommitNotLost } from '../store/commit.js';
import { LocalStore } from '../store/local-store.js';
import { nameCommit } from './manifest.js';
import { datasetOfFile } from '../duckdb/damaged.js';
import {
  FolderInUseError,
  InterruptedError,
  MissingObjectError,
  explainIoError,
} from '../errors.js';
import type { LogFields, Logger } from '../log.js';
import type { Progress } from '../progress.js';
import { checkFolderFormat } from '../store/folder-format.js';
import { openStore } from '../store/open.js';
import { commitId, putFolder } from '../store/put-folder.js';
import { WorkingCopy } from '../store/working-copy.js';
import { scratchCopy } from '../store/scratch.js';
import type { HeldLock, ObjectStore } from '../store/store.js';
import { assertOwnFolder, fetchFolder, type Fetched } from '../store/sync.js';
import type { Pipeline } from './build.js';
import { REPAIR_DOES, isDataFile, repairCommand, repairPath } from './repair.js';
import { checkRunOptions, runPipeline, type RunResult } from './run.js';
import { NOTHING_AHEAD, stageAhead, type StagedAhead } from './stage-ahead.js';
import type { RunSummary } from './summary.js';

export interface NightOptions {
  /** The output folder as the user named it: a local path, s3://… or az://…. */
  url: string;
  env: NodeJS.ProcessEnv;
  /** The definition, built with the local copy `local` as its output folder (whose paths it checks). */
  definition(local: string): Promise<Pipeline>;
  select?: readonly string[] | undefined;
  reset?: readonly string[] | undefined;
  acceptUpstream?: readonly string[] | undefined;
  repair?: readonly string[] | undefined;
  /** Seconds to wait for a folder another run holds (0: refuse at once). */
  waitForLock: number;
  logger: Logger;
  /** The night's progress, told through `logger` (which names the folder as the user did). */
  progress(logger: Logger): Progress;
  controller: AbortController;
  /** Told the pipeline's name once its definition is read. */
  named?(pipeline: string): void;
}

/** Runs one night on the folder `url` (see above); resolves to its summary and failure. */
export async function runNight(options: NightOptions): Promise<RunResult> {
  const { url, logger, controller } = options;
  const store = await openStore(url, options.env);
  const scratch = await scratchCopy(store);
  const local = scratch.folder;
  let ahead: Promise<StagedAhead> | undefined;
  try {
    const pipeline = await options.definition(local);
    options.named?.(pipeline.name);
    checkRunOptions(pipeline, options);
    // Someone else's objects there: refused before the lock is taken, nothing written.
    await assertOwnFolder(store);
    await scratch.make().catch((error: unknown) => {
      throw explainIoError(error, `making the run's copy of ${url}`);
    });
    const held = await lockWaiting(store, pipeline.name, {
      seconds: options.waitForLock,
      logger,
      signal: controller.signal,
      // Held by another run: this one's extraction goes on meanwhile.
      waiting: () => {
        ahead ??= stageAhead(pipeline, {
          output: local,
          select: options.select,
          logger,
          signal: controller.signal,
        });
      },
    });
    try {
      return await inCopy(store, { local, pipeline }, options, held, await ahead);
    } finally {
      await held.release();
    }
  } catch (error) {
    // The local disk's trouble (full, read-only) outside a step: named with the folder.
    throw explainIoError(error, `the run on ${url}`);
  } finally {
    await (await ahead)?.close();
    await scratch.remove();
  }
}

/** The night on the local copy `local` of the store's folder, once it holds the lock. */
async function inCopy(
  store: ObjectStore,
  { local, pipeline }: { local: string; pipeline: Pipeline },
  options: NightOptions,
  held: HeldLock,
  staged: StagedAhead | undefined,
): Promise<RunResult> {
  const { url, controller } = options;
  const logger = options.logger;
  if (held.guarantee === 'advisory')
    logger.log(
      'warn',
      'store.lock',
      `${store.url} does not enforce conditional writes: the folder's lock is advisory (an owner and a lease, read back after writing); two runs started at the same moment may both go on. S3 itself enforces them, as do recent MinIO releases`,
      { guarantee: held.guarantee },
    );
  // The data stays in the store until a step's plan reads it (working-copy.ts).
  const remote = new WorkingCopy(store, local);
  const repair = new Set((options.repair ?? []).map(repairPath));
  const fetched = await fetchFolder(store, local, remote, repair).catch((error: unknown) => {
    throw lostObject(error, { pipeline, url, local });
  });
  logger.log(
    'info',
    'store.fetch',
    `Fetched ${fetched.fetched} of the ${fetched.files} file(s) of ${store.url}, ${fetched.bytes} bytes${fetched.commit ? ` (committed ${fetched.commit.committed_at})` : ' (a new folder)'}; the others before the step that reads them`,
    { files: fetched.files, fetched: fetched.fetched, bytes: fetched.bytes },
  );
  const shown = showingAt(logger, local, url);
  // A folder of another layout is refused before anything is planned or written.
  await checkFolderFormat(local, url);
  const commit = commitId();
  const result = await runPipeline(pipeline, {
    output: local,
    select: options.select,
    reset: options.reset,
    acceptUpstream: options.acceptUpstream,
    logger: shown,
    progress: options.progress(shown),
    signal: controller.signal,
    // The run holds the folder (its store's lock); what it fetched while waiting for it is staged.
    ahead: (staged ?? NOTHING_AHEAD).work,
    repair: options.repair,
    shown: url,
    files: remote,
    commit,
  });
  let { summary, failure } = result;
  // What the run landed, failed or not, goes back to the store.
  try {
    await put(store, local, { fetched, remote, commit, logger: shown });
  } catch (error) {
    const trouble = explainIoError(error, `putting the run's files into ${url}`);
    // A step's own failure stays the run's (the put may fail of the same cause: a full disk).
    if (failure) shown.log('error', 'store.put', trouble.message);
    failure ??= trouble;
    summary = { ...summary, status: 'failed', error: failure.message, exit_code: 1 };
  }
  if (failure) failure.message = shownText(failure.message, local, url);
  return { summary: shownAt(summary, local, url), failure };
}

/** A lost object of the commit, named with its repair: a command that runs as printed. */
function lostObject(
  error: unknown,
  { pipeline, url, local }: { pipeline: Pipeline; url: string; local: string },
) {
  if (!(error instanceof MissingObjectError)) return error;
  const dataset = datasetOfFile(local, join(local, ...error.path.split('/')));
  return new MissingObjectError(error.url, error.key, {
    cause: error,
    path: error.path,
    changed: error.changed,
    // A data file is fetched or built again; another file (an extract, the report) is restored.
    ...(!isDataFile(error.path)
      ? {}
      : {
          repair: `${repairCommand(pipeline, url, error.path, dataset)} (${REPAIR_DOES})`,
        }),
  });
}

/** Puts the local copy back as the folder's next commit, and says what moved. */
async function put(
  store: ObjectStore,
  local: string,
  how: { fetched: Fetched; remote: WorkingCopy; commit: string; logger: Logger },
): Promise<void> {
  const { remote, logger } = how;
  const done = await putFolder(store, local, remote, how.fetched, { id: how.commit });
  logger.log(
    'info',
    'store.fetched',
    `Fetched ${remote.fetched.files} file(s), ${remote.fetched.bytes} bytes, of ${store.url} for the steps that read them`,
    { ...remote.fetched },
  );
  logger.log(
    'info',
    'store.put',
    `Put ${done.uploaded} changed file(s), ${done.bytes} bytes, to ${store.url}; ${done.removed} object(s) no longer part of the folder removed`,
    { ...done },
  );
}

/**
 * The store's lock; with `seconds` > 0, a folder held by another run is
 * waited for (asked again every 2 s) up to that long; `waiting` is told once.
 */
async function lockWaiting(
  store: ObjectStore,
  pipeline: string,
  options: { seconds: number; logger: Logger; signal: AbortSignal; waiting: () => void },
): Promise<HeldLock> {
  const { seconds, logger, signal } = options;
  const deadline = Date.now() + Math.max(0, seconds) * 1000;
  let told = false;
  for (;;) {
    if (signal.aborted) throw new InterruptedError(String(signal.reason ?? 'a signal'));
    try {
      return await store.lock(pipeline);
    } catch (error) {
      if (!(error instanceof FolderInUseError) || Date.now() >= deadline) throw error;
      if (!told) {
        logger.log('info', 'lock.wait', `${error.message}: waiting for it, up to ${seconds} s`);
        options.waiting();
      }
      told = true;
      await new Promise((wake) => setTimeout(wake, 2000));
    }
  }
}

/** Text with the output folder's URL (or path) where the local copy's paths are. */
function shownText(text: string, local: string, url: string): string {
  return text.replaceAll(local, url.replace(/\/$/, ''));
}

/** A logger that names the output folder as the user did where the local copy's paths are. */
function showingAt(logger: Logger, local: string, url: string): Logger {
  const shown = (text: string) => shownText(text, local, url);
  return {
    interactive: logger.interactive,
    log: (level, event, message, fields) =>
      logger.log(
        level,
        event,
        shown(message),
        fields && (JSON.parse(shown(JSON.stringify(fields))) as LogFields),
      ),
  };
}

/** The summary with the store's URL where the local copy's paths are. */
export function shownAt(summary: RunSummary, local: string, url: string): RunSummary {
  const at = (path: string | undefined): string | undefined =>
    path === undefined
      ? undefined
      : url.replace(/\/?$/, '/') + relative(local, path).split(sep).join('/');
  const manifest = at(summary.manifest);
  const report = at(summary.report);
  return {
    ...summary,
    ...(summary.error === undefined ? {} : { error: shownText(summary.error, local, url) }),
    output: url,
    ...(manifest ? { manifest } : {}),
    ...(report ? { report } : {}),
  };
}

export interface OutputFolder {
  /** The local folder to work on. */
  folder: string;
  /** A path in it as the user names it (under the store's URL when there is one). */
  shown: (path: string) => string;
  /** The folder's listing (a folder in a store: with the commit's files not fetched, which it fetches when brought). */
  files: FolderFiles;
}

/** The output folder a command names: a local folder, or one in an object store. */
export type FolderTarget = { kind: 'local'; folder: string } | { kind: 'store'; url: string };

/**
 * Runs `work` on the local folder a command reads (plan, validate, query,
 * report): a copy of the folder's last commit in an empty local folder
 * (store/scratch.ts), removed after, its data files known from the commit
 * (working-copy.ts) and fetched when the command reads them. A command that
 * writes (report) holds the store's lock and puts back what changed as the
 * next commit, which the manifest names. A local folder that no run has
 * committed is read (and a report written into it) as it lies.
 */
export async function withFolder<T>(
  target: FolderTarget,
  env: NodeJS.ProcessEnv,
  work: (output: OutputFolder) => Promise<T>,
  {
    writes,
    without = new Set(),
  }: {
    /** Puts what the command wrote back to the store, under its lock (named so). */
    writes?: { lock: string };
    /** Files of the commit left out of the copy, as the run removes them first (--repair). */
    without?: ReadonlySet<string>;
  } = {},
): Promise<T> {
  // A local folder no run committed (Parquet made otherwise, or none yet): its files as they lie,
  // unless they are a committed folder's whose commit is gone.
  if (target.kind === 'local' && !existsSync(join(target.folder, ...COMMIT_KEY.split('/')))) {
    const store = new LocalStore(target.folder, { reading: true });
    assertCommitNotLost(store, await store.list());
    return work({ folder: target.folder, shown: (path) => path, files: DISK });
  }
  const url = target.kind === 'local' ? target.folder : target.url;
  const store =
    target.kind === 'local' ? new LocalStore(url, { reading: !writes }) : await openStore(url, env);
  const scratch = await scratchCopy(store);
  const local = scratch.folder;
  let held: Awaited<ReturnType<typeof store.lock>> | undefined;
  try {
    await assertOwnFolder(store);
    await scratch.make();
    held = writes ? await store.lock(writes.lock) : undefined;
    const remote = new WorkingCopy(store, local);
    const fetched = await fetchFolder(store, local, remote, without);
    const result = await work({
      folder: local,
      shown: (path) =>
        target.kind === 'local'
          ? join(url, relative(local, path))
          : `${url.replace(/\/?$/, '/')}${relative(local, path).split(sep).join('/')}`,
      files: remote,
    });
    if (writes) {
      const commit = commitId();
      await nameCommit(local, commit, remote);
      await putFolder(store, local, remote, fetched, { id: commit });
    }
    return result;
  } finally {
    await held?.release();
    await scratch.remove();
  }
}
