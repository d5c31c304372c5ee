/** `road-etl run PIPELINE.yaml`: run a pipeline (or print its plan with --dry-run). */
import type { Argv, CommandModule } from 'yargs';
import { describePlan, runPipeline } from '../pipeline/run.js';
import { createProgress } from '../progress.js';
import {
  commaList,
  loggerFor,
  outputFolder,
  pipelineFromArgs,
  withPipelineArguments,
  type CommonArgs,
} from './common.js';

interface RunArgs extends CommonArgs {
  pipeline: string;
  param: string[];
  select: string[] | undefined;
  reset: string[] | undefined;
  'dry-run': boolean;
}

export const runCommand: CommandModule<object, RunArgs> = {
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
    const output = outputFolder(args);
    const logger = loggerFor(args);
    const select = commaList(args.select);
    const pipeline = await pipelineFromArgs(args, output);
    if (args['dry-run']) {
      const lines = await describePlan(pipeline, output, select);
      process.stdout.write(lines.join('\n') + '\n');
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
      const { summary, failure } = await runPipeline(pipeline, {
        output,
        select,
        reset: commaList(args.reset),
        logger,
        progress: createProgress(logger, process.stderr),
        signal: controller.signal,
      });
      process.stdout.write(JSON.stringify(summary) + '\n');
      if (failure) throw failure;
    } finally {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
    }
  },
};
