/** `road-etl run PIPELINE.yaml`: run a pipeline (or print its plan with --dry-run). */
import type { Argv, CommandModule } from 'yargs';
import { join, resolve } from 'node:path';
import { definitionName, lockWaiting, shownAt, takingTurns, type StoreRun } from './run-support.js';
import type { Pipeline } from '../pipeline/build.js';
import { planLines, planRun, selectSteps } from '../pipeline/plan.js';
import { runPipeline } from '../pipeline/run.js';
import { plannedSummary, refusedSummary, type RunSummary } from '../pipeline/summary.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { openStore } from '../store/open.js';
import { RemoteFiles } from '../store/remote-files.js';
import { fetchFolder, putFolder } from '../store/sync.js';
import { createProgress } from '../progress.js';
import {
  commaList,
  loggerFor,
  outputTarget,
  pipelineFromArgs,
  withPipelineArguments,
  type CommonArgs,
} from './common.js';
import { writeOut, type CliIo } from './io.js';

interface RunArgs extends CommonArgs {
  pipeline: string;
  param: string[];
  select: string[] | undefined;
  reset: string[] | undefined;
  'accept-upstream': string[] | undefined;
  'dry-run': boolean;
  'wait-for-lock': number | undefined;
}

export const runCommand = (io: CliIo): CommandModule<object, RunArgs> => ({
  command: 'run <pipeline>',
  describe: 'Run a pipeline definition',
  builder: (yargs: Argv) =>
    withPipelineArguments(yargs)
      .option('select', {
        type: 'string',
        array: true,
        describe: 'Run only these steps (comma list); others are reused',
      })
      .option('reset', {
        type: 'string',
        array: true,
        describe: 'Start these steps over: forget their checkpoints and data',
      })
      .option('accept-upstream', {
        type: 'string',
        array: true,
        describe:
          'These steps (comma list) read the same upstream as their landed data, whatever its check says: keep the data and go on',
      })
      .option('wait-for-lock', {
        type: 'number',
        default: 0,
        describe:
          'When another run holds the output folder, wait up to this many seconds for it to finish instead of failing (parallel backfills take turns)',
      })
      .option('dry-run', {
        type: 'boolean',
        default: false,
        describe: 'Print the plan; touch nothing',
      })
      .example('$0 run pipelines/demo.yaml', 'the demo, on the embedded simulator')
      .example(
        '$0 run pipelines/bicycle.yaml --param start=2025-03-01T00:00:00Z --param end=2025-03-02T00:00:00Z --param prefixes=GAL',
        'one day of bicycle counts',
      )
      .example(
        '$0 run pipelines/traffic-signs.yaml --select signs_current_state',
        'rebuild the current state from the events already extracted',
      ) as unknown as Argv<RunArgs>,
  handler: async (args) => {
    let pipelineName: string | null = null;
    let output = args.output;
    try {
      const target = outputTarget(args);
      if (target.kind === 'store') {
        output = target.url;
        await runInStore(target.url, args, io, (name) => {
          pipelineName = name;
        });
        return;
      }
      output = target.folder;
      const pipeline = await pipelineFromArgs(args, output, io);
      pipelineName = pipeline.name;
      const folder = output;
      await runCommandFor(pipeline, args, output, io, () => pipelineFromArgs(args, folder, io));
    } catch (error) {
      // A run refused before it started (bad input, a held lock) still ends stdout with its summary.
      if (!summarized.has(error as object))
        printSummary(
          io,
          refusedSummary(error, {
            pipeline: pipelineName ?? definitionName(args.pipeline),
            output,
          }),
        );
      throw markSummarized(error);
    }
  },
});

/**
 * `run --output s3://...`: the definition checked first (bad input asks
 * nothing of the store), then the folder taken (the store's lock), its last
 * commit fetched into an empty local folder, the run made there, and what
 * changed put back (sync.ts); the local copy removed after.
 */
async function runInStore(
  url: string,
  args: RunArgs,
  io: CliIo,
  named: (pipeline: string) => void,
): Promise<void> {
  const store = openStore(url, io.env);
  const local = await mkdtemp(join(tmpdir(), 'road-etl-output-'));
  const remote = new RemoteFiles(store, local);
  try {
    const { name } = await pipelineFromArgs(args, local, io);
    named(name);
    const logger = loggerFor(args, io);
    const held = await lockWaiting(store, name, args['wait-for-lock'] ?? 0, logger);
    try {
      if (held.guarantee === 'advisory')
        logger.log(
          'warn',
          'store.lock',
          `${store.url} does not enforce conditional writes: the folder's lock is advisory (an owner and a lease, read back after writing); two runs started at the same moment may both go on. S3 itself enforces them, as do recent MinIO releases`,
          { guarantee: held.guarantee },
        );
      // The data stays in the store until something reads it (remote-files.ts).
      const fetched = await fetchFolder(store, local, remote);
      logger.log(
        'info',
        'store.fetch',
        `Fetched ${fetched.fetched} of the ${fetched.files} file(s) of ${store.url}, ${fetched.bytes} bytes${fetched.commit ? ` (committed ${fetched.commit.committed_at})` : ' (a new folder)'}; the others when read`,
        { files: fetched.files, fetched: fetched.fetched, bytes: fetched.bytes },
      );
      const rebuild = () => pipelineFromArgs(args, local, io);
      await runCommandFor(await rebuild(), args, local, io, rebuild, {
        url,
        put: async () => {
          const put = await putFolder(
            store,
            local,
            fetched.commit,
            undefined,
            remote,
            fetched.listed,
          );
          logger.log(
            'info',
            'store.fetched',
            `Fetched ${remote.fetched.files} file(s), ${remote.fetched.bytes} bytes, of ${store.url} when read`,
            { ...remote.fetched },
          );
          logger.log(
            'info',
            'store.put',
            `Put ${put.uploaded} changed file(s), ${put.bytes} bytes, to ${store.url}; ${put.removed} object(s) no longer part of the folder removed`,
            { ...put },
          );
        },
      });
    } finally {
      await held.release();
    }
  } finally {
    remote.close();
    await rm(local, { recursive: true, force: true });
  }
}

/** Errors whose summary line is already on stdout. */
const summarized = new WeakSet<object>();

function markSummarized(error: unknown): unknown {
  if (typeof error === 'object' && error !== null) summarized.add(error);
  return error;
}

function printSummary(io: CliIo, summary: RunSummary): void {
  io.stdout.write(JSON.stringify(summary) + '\n');
}

/**
 * The summary line of a `run` that failed before its handler ran (a command-line
 * mistake found by the parser): every exit of `run` ends stdout with one.
 */
export function printRefusedRun(argv: readonly string[], error: unknown, io: CliIo): void {
  if (argv[0] !== 'run' || summarized.has(error as object)) return;
  const at = argv.indexOf('--output');
  const output = at >= 0 && argv[at + 1] ? argv[at + 1]! : 'output';
  const file = argv[1] !== undefined && !argv[1].startsWith('-') ? argv[1] : undefined;
  printSummary(
    io,
    refusedSummary(error, {
      pipeline: file === undefined ? null : definitionName(file),
      output: resolve(output),
    }),
  );
  markSummarized(error);
}

async function runCommandFor(
  definition: Pipeline,
  args: RunArgs,
  output: string,
  io: CliIo,
  /** The definition built again, with the folder's state as it is now (after a wait for the lock). */
  rebuild: () => Promise<Pipeline>,
  store?: StoreRun,
): Promise<void> {
  const pipeline = definition;
  const logger = loggerFor(args, io);
  const select = commaList(args.select);
  if (args['dry-run']) {
    const plan = await planRun(
      pipeline,
      output,
      selectSteps(pipeline, select),
      new Set(commaList(args.reset)),
    );
    await writeOut(io.stdout, planLines(plan).join('\n') + '\n');
    printSummary(io, plannedSummary(pipeline, output, select));
    return;
  }
  const controller = new AbortController();
  const stop = (signal: NodeJS.Signals): void => {
    if (controller.signal.aborted) process.exit(1); // a second signal: stop now
    logger.log(
      'warn',
      'run.interrupt',
      `${signal} received: finishing the current unit of work, then stopping`,
      { signal },
    );
    controller.abort(signal);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  try {
    const result = await takingTurns(pipeline, rebuild, {
      output,
      seconds: args['wait-for-lock'] ?? 0,
      controller,
      logger,
      run: (current) =>
        runPipeline(current, {
          output,
          select,
          reset: commaList(args.reset),
          acceptUpstream: commaList(args['accept-upstream']),
          logger,
          progress: createProgress(logger, io.stderr),
          signal: controller.signal,
        }),
    });
    let { summary, failure } = result;
    if (store) {
      // What the run landed, failed or not, goes back to the store.
      try {
        await store.put();
      } catch (error) {
        failure = error instanceof Error ? error : new Error(String(error));
        summary = { ...summary, status: 'failed', error: failure.message, exit_code: 1 };
      }
      summary = shownAt(summary, output, store.url);
    }
    printSummary(io, summary);
    if (failure) throw markSummarized(failure);
  } finally {
    process.off('SIGTERM', stop);
    process.off('SIGINT', stop);
  }
}
