/**
 * A night on an output folder, from its store to its summary: the folder
 * opened (a local path, s3:// or az://), checked to be road-etl's, the lock
 * taken (waiting for another run where asked, fetching ahead meanwhile), the
 * last commit fetched into a local copy, the pipeline run there, what it did
 * put back as the next commit, the lock released and the copy removed. The
 * `run` command parses its arguments, calls runNight and prints the summary.
 */
import { join, relative, sep } from 'node:path';
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
import { RemoteFiles } from '../store/remote-files.js';
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
  /** The definition, built over the local copy `local` (its params, the copy's state). */
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
    const first = await options.definition(local);
    options.named?.(first.name);
    checkRunOptions(first, options);
    // Someone else's objects there: refused before the lock is taken, nothing written.
    await assertOwnFolder(store);
    await scratch.make().catch((error: unknown) => {
      throw explainIoError(error, `making the run's copy of ${url}`);
    });
    const held = await lockWaiting(store, first.name, {
      seconds: options.waitForLock,
      logger,
      signal: controller.signal,
      // Held by another run: this one's extraction goes on meanwhile.
      waiting: () => {
        ahead ??= stageAhead(first, {
          output: local,
          select: options.select,
          logger,
          signal: controller.signal,
        });
      },
    });
    try {
      return await inCopy(store, local, options, held, await ahead);
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
  local: string,
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
  // The data stays in the store until a step's plan reads it (remote-files.ts).
  const remote = new RemoteFiles(store, local);
  const repair = new Set((options.repair ?? []).map(repairPath));
  const fetched = await fetchFolder(store, local, remote, repair).catch(async (error: unknown) => {
    throw await lostObject(error, options, local);
  });
  logger.log(
    'info',
    'store.fetch',
    `Fetched ${fetched.fetched} of the ${fetched.files} file(s) of ${store.url}, ${fetched.bytes} bytes${fetched.commit ? ` (committed ${fetched.commit.committed_at})` : ' (a new folder)'}; the others before the step that reads them`,
    { files: fetched.files, fetched: fetched.fetched, bytes: fetched.bytes },
  );
  const pipeline = await options.definition(local);
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
async function lostObject(error: unknown, options: NightOptions, local: string) {
  if (!(error instanceof MissingObjectError)) return error;
  const pipeline = await options.definition(local);
  const dataset = datasetOfFile(local, join(local, ...error.path.split('/')));
  return new MissingObjectError(error.url, error.key, {
    cause: error,
    path: error.path,
    changed: error.changed,
    // A data file is fetched or built again; another file (an extract, the report) is restored.
    ...(!isDataFile(error.path)
      ? {}
      : {
          repair: `${repairCommand(pipeline, options.url, error.path, dataset)} (${REPAIR_DOES})`,
        }),
  });
}

/** Puts the local copy back as the folder's next commit, and says what moved. */
async function put(
  store: ObjectStore,
  local: string,
  how: { fetched: Fetched; remote: RemoteFiles; commit: string; logger: Logger },
): Promise<void> {
  const { remote, logger } = how;
  const done = await putFolder(store, local, how.fetched, { onDemand: remote, id: how.commit });
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
