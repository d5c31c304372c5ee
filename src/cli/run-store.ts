/** `road-etl run`: the run on a local copy of the output folder's commit (a folder on disk, in S3 or in Azure). */
import { scratchCopy } from './scratch.js';
import type { Pipeline } from '../pipeline/build.js';
import { stageAhead, type StagedAhead } from '../pipeline/stage-ahead.js';
import { openStore } from '../store/open.js';
import { RemoteFiles } from '../store/remote-files.js';
import type { HeldLock, ObjectStore } from '../store/store.js';
import { assertOwnFolder, fetchFolder } from '../store/sync.js';
import { join } from 'node:path';
import { datasetOfFile } from '../duckdb/damaged.js';
import { MissingObjectError, explainIoError } from '../errors.js';
import { REPAIR_DOES, isDataFile, repairCommand, repairPath } from '../pipeline/repair.js';
import { commitId, putFolder } from '../store/put-folder.js';
import { checkRunOptions } from '../pipeline/run.js';
import { commaList, loggerFor, pipelineFromArgs } from './common.js';
import type { CliIo } from './io.js';
import { lockWaiting, onSignals, type RunArgs, type StoreRun } from './run-support.js';

/** How the run goes on once the folder is local: `road-etl run`'s own path. */
export type RunHere = (
  pipeline: Pipeline,
  local: string,
  how: {
    rebuild: () => Promise<Pipeline>;
    controller: AbortController;
    staged?: StagedAhead | undefined;
    store: StoreRun;
  },
) => Promise<void>;

/**
 * `run`: the definition checked first (bad input asks
 * nothing of the store), then the folder taken (the store's lock), its last
 * commit fetched into an empty local folder, the run made there, and what
 * changed put back (sync.ts); the local copy removed after.
 */
export async function runInStore(
  url: string,
  args: RunArgs,
  io: CliIo,
  { named, runHere }: { named: (pipeline: string) => void; runHere: RunHere },
): Promise<void> {
  const store = await openStore(url, io.env);
  const scratch = await scratchCopy(store);
  const local = scratch.folder;
  const remote = new RemoteFiles(store, local);
  const controller = new AbortController();
  const logger = loggerFor(args, io);
  let ahead: Promise<StagedAhead> | undefined;
  try {
    await onSignals(controller, logger, async () => {
      const first = await pipelineFromArgs(args, local, io);
      named(first.name);
      checkRunOptions(first, {
        select: commaList(args.select),
        reset: commaList(args.reset),
        acceptUpstream: commaList(args['accept-upstream']),
        repair: commaList(args.repair),
      });
      // Someone else's objects there: refused before the lock is taken, nothing written.
      await assertOwnFolder(store);
      await scratch.make().catch((error: unknown) => {
        throw explainIoError(error, `making the run's copy of ${url}`);
      });
      const held = await lockWaiting(store, first.name, {
        seconds: args['wait-for-lock'] ?? 0,
        logger,
        signal: controller.signal,
        // Held by another run: this one's extraction goes on meanwhile.
        waiting: () => {
          ahead ??= stageAhead(first, {
            output: local,
            select: commaList(args.select),
            logger,
            signal: controller.signal,
          });
        },
      });
      try {
        await inStore(
          store,
          { url, local, remote, args, io, logger, controller, held, runHere },
          await ahead,
        );
      } finally {
        await held.release();
      }
    });
  } catch (error) {
    // The local disk's trouble (full, read-only) outside a step: named with the folder.
    throw explainIoError(error, `the run on ${url}`);
  } finally {
    await (await ahead)?.close();
    await scratch.remove();
  }
}

/** The run on the local copy of a store's folder, once the run holds the store's lock. */
async function inStore(
  store: ObjectStore,
  taken: {
    /** The store's URL as the user gave it (the summary names the folder so). */
    url: string;
    local: string;
    remote: RemoteFiles;
    args: RunArgs;
    io: CliIo;
    logger: ReturnType<typeof loggerFor>;
    controller: AbortController;
    held: HeldLock;
    runHere: RunHere;
  },
  staged: StagedAhead | undefined,
): Promise<void> {
  const { local, remote, args, io, logger } = taken;
  const { guarantee } = taken.held;
  if (guarantee === 'advisory')
    logger.log(
      'warn',
      'store.lock',
      `${store.url} does not enforce conditional writes: the folder's lock is advisory (an owner and a lease, read back after writing); two runs started at the same moment may both go on. S3 itself enforces them, as do recent MinIO releases`,
      { guarantee },
    );
  // The data stays in the store until a step's plan reads it (remote-files.ts).
  const repair = new Set((commaList(args.repair) ?? []).map(repairPath));
  const fetched = await fetchFolder(store, local, remote, repair).catch(async (error: unknown) => {
    // The lost object's repair, as a command that runs as printed.
    if (!(error instanceof MissingObjectError)) throw error;
    const pipeline = await pipelineFromArgs(args, local, io);
    const dataset = datasetOfFile(local, join(local, ...error.path.split('/')));
    throw new MissingObjectError(error.url, error.key, {
      cause: error,
      path: error.path,
      changed: error.changed,
      // A data file is fetched or built again; another file (an extract, the report) is restored.
      ...(!isDataFile(error.path)
        ? {}
        : {
            repair: `${repairCommand(pipeline, taken.url, error.path, dataset)} (${REPAIR_DOES})`,
          }),
    });
  });
  logger.log(
    'info',
    'store.fetch',
    `Fetched ${fetched.fetched} of the ${fetched.files} file(s) of ${store.url}, ${fetched.bytes} bytes${fetched.commit ? ` (committed ${fetched.commit.committed_at})` : ' (a new folder)'}; the others before the step that reads them`,
    { files: fetched.files, fetched: fetched.fetched, bytes: fetched.bytes },
  );
  const rebuild = () => pipelineFromArgs(args, local, io);
  const commit = commitId();
  await taken.runHere(await rebuild(), local, {
    rebuild,
    controller: taken.controller,
    staged,
    store: {
      url: taken.url,
      commit,
      files: remote,
      put: async () => {
        const put = await putFolder(store, local, fetched, { onDemand: remote, id: commit });
        logger.log(
          'info',
          'store.fetched',
          `Fetched ${remote.fetched.files} file(s), ${remote.fetched.bytes} bytes, of ${store.url} for the steps that read them`,
          { ...remote.fetched },
        );
        logger.log(
          'info',
          'store.put',
          `Put ${put.uploaded} changed file(s), ${put.bytes} bytes, to ${store.url}; ${put.removed} object(s) no longer part of the folder removed`,
          { ...put },
        );
      },
    },
  });
}
