/** `road-etl run PIPELINE.yaml`: run a pipeline (or print its plan with --dry-run). */
import type { Argv, CommandModule } from 'yargs';
import { resolve } from 'node:path';
import type { Pipeline } from '../pipeline/build.js';
import { planLines, planRun, selectSteps } from '../pipeline/plan.js';
import { runPipeline } from '../pipeline/run.js';
import { waitForFolder } from '../pipeline/state.js';
import { FolderInUseError, InterruptedError } from '../errors.js';
import { plannedSummary, refusedSummary, type RunSummary } from '../pipeline/summary.js';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { createProgress } from '../progress.js';
import {
  commaList,
  loggerFor,
  outputFolder,
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
      output = outputFolder(args);
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
 * The `name` a definition file gives itself, read as plain YAML (null when it
 * cannot be read or has none): a run refused before its definition is valid
 * still names the pipeline in its summary.
 */
function definitionName(file: string): string | null {
  try {
    const name = (parse(readFileSync(file, 'utf8')) as { name?: unknown } | null)?.name;
    return typeof name === 'string' && name !== '' ? name : null;
  } catch {
    return null;
  }
}

/**
 * Runs the pipeline; with `seconds` > 0, a folder held by another run is
 * waited for (up to that long), and the definition built again with the
 * folder's state as that run left it, before the run takes the folder.
 */
async function takingTurns<T>(
  first: Pipeline,
  rebuild: () => Promise<Pipeline>,
  options: {
    output: string;
    seconds: number;
    controller: AbortController;
    logger: ReturnType<typeof loggerFor>;
    run: (pipeline: Pipeline) => Promise<T>;
  },
): Promise<T> {
  const { output, controller, logger } = options;
  const waitMs = Math.max(0, options.seconds) * 1000;
  const deadline = Date.now() + waitMs;
  let pipeline = first;
  for (;;) {
    if (waitMs > 0) {
      await waitForFolder(output, {
        timeoutMs: Math.max(0, deadline - Date.now()),
        signal: controller.signal,
        waiting: (holder) =>
          logger.log(
            'info',
            'lock.wait',
            `The output folder is in use by another run (pipeline ${holder.pipeline}, pid ${holder.pid} on ${holder.hostname}): waiting for it, up to ${options.seconds} s`,
            { pipeline: holder.pipeline, pid: holder.pid, hostname: holder.hostname },
          ),
      }).catch((error: unknown) => {
        if (controller.signal.aborted)
          throw new InterruptedError(String(controller.signal.reason ?? 'a signal'));
        throw error;
      });
      pipeline = await rebuild();
    }
    try {
      return await options.run(pipeline);
    } catch (error) {
      // Taken by another run between the wait and the lock: wait again.
      if (error instanceof FolderInUseError && waitMs > 0 && Date.now() < deadline) continue;
      throw error;
    }
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
    const { summary, failure } = result;
    printSummary(io, summary);
    if (failure) throw markSummarized(failure);
  } finally {
    process.off('SIGTERM', stop);
    process.off('SIGINT', stop);
  }
}
