/** `road-etl run PIPELINE.yaml`: run a pipeline (or print its plan with --dry-run). */
import type { Argv, CommandModule } from 'yargs';
import { resolve } from 'node:path';
import { definitionName, onSignals, type RunArgs } from './run-support.js';
import { runNight } from '../pipeline/session.js';
import { plannedSummary, refusedSummary, type RunSummary } from '../pipeline/summary.js';
import { createProgress } from '../progress.js';
import {
  commaList,
  loggerFor,
  outputTarget,
  pipelineFromArgs,
  withPipelineArguments,
} from './common.js';
import type { CliIo } from './io.js';
import { printPlan } from './plan.js';

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
      .option('repair', {
        type: 'string',
        array: true,
        describe:
          'Remove these damaged or lost data files (paths in the output folder) before the run, which fetches or builds again what they held; every other file is kept',
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
          'When another run holds the output folder, wait up to this many seconds for it to finish instead of failing; meanwhile the run fetches its bicycle counts (parallel backfills extract at once and land in turn)',
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
      output = target.kind === 'store' ? target.url : target.folder;
      if (args['dry-run']) {
        pipelineName = definitionName(args.pipeline);
        await dryRun(args, io, output);
        return;
      }
      await run(args, io, output, (name) => {
        pipelineName = name;
      });
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

/** The night (pipeline/session.ts), SIGTERM and SIGINT stopping it; its summary printed. */
async function run(
  args: RunArgs,
  io: CliIo,
  output: string,
  named: (pipeline: string) => void,
): Promise<void> {
  const logger = loggerFor(args, io);
  const controller = new AbortController();
  const { summary, failure } = await onSignals(controller, logger, () =>
    runNight({
      url: output,
      env: io.env,
      definition: (local) => pipelineFromArgs(args, local, io),
      select: commaList(args.select),
      reset: commaList(args.reset),
      acceptUpstream: commaList(args['accept-upstream']),
      repair: commaList(args.repair),
      waitForLock: args['wait-for-lock'] ?? 0,
      logger,
      progress: (shown) => createProgress(shown, io.stderr),
      controller,
      named,
    }),
  );
  printSummary(io, summary);
  if (failure) throw markSummarized(failure);
}

/** `--dry-run`: the plan printed as `road-etl plan` prints it (no lock taken), and its summary. */
async function dryRun(args: RunArgs, io: CliIo, shownOutput: string): Promise<void> {
  const pipeline = await printPlan(args, io, 'text');
  printSummary(io, plannedSummary(pipeline, shownOutput, commaList(args.select)));
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
