/**
 * `road-etl plan PIPELINE.yaml`: what the next run does, decided against the
 * folder as it is before anything runs: each step's decision (skip, partial
 * or whole, and why), the partitions it builds and those it reads of every
 * dataset, as text or as one line of JSON. Changes nothing.
 */
import type { Argv, CommandModule } from 'yargs';
import type { Pipeline } from '../pipeline/build.js';
import { checkFolderFormat } from '../store/folder-format.js';
import { planLines, planRun } from '../pipeline/plan.js';
import { checkRunOptions } from '../pipeline/run.js';
import { isDataFile, repairPath } from '../pipeline/repair.js';
import { openPlanFolder } from '../pipeline/run-folder.js';
import {
  commaList,
  outputTarget,
  pipelineFromArgs,
  withPipelineArguments,
  type CommonArgs,
} from './common.js';
import { writeOut, type CliIo } from './io.js';
import { withFolder } from '../pipeline/session.js';

interface PlanArgs extends CommonArgs {
  pipeline: string;
  param: string[];
  select: string[] | undefined;
  reset: string[] | undefined;
  format: 'text' | 'json';
  verbose?: boolean | undefined;
  /** What `run --dry-run` passes on: checked as `run` checks them. */
  repair?: string[] | undefined;
  'accept-upstream'?: string[] | undefined;
}

export const planCommand = (io: CliIo): CommandModule<object, PlanArgs> => ({
  command: 'plan <pipeline>',
  describe: 'Print what the next run builds and reads of the output folder (changes nothing)',
  builder: (yargs: Argv) =>
    withPipelineArguments(yargs)
      .option('select', { type: 'string', array: true, describe: 'Plan only these steps' })
      .option('reset', {
        type: 'string',
        array: true,
        describe: 'Plan these steps as started over',
      })
      .option('verbose', {
        type: 'boolean',
        default: false,
        describe:
          'text: every step with what it runs, its rules and everything it reads (default: one or two lines a step)',
      })
      .option('format', {
        choices: ['text', 'json'] as const,
        default: 'text' as const,
        describe:
          'text: the plan in words; json: one line of JSON, each step with its decision (decision, why, builds, reads, files)',
      }) as unknown as Argv<PlanArgs>,
  handler: async (args) => {
    await printPlan(args, io, args.format);
  },
});

/**
 * Prints the next run's plan of the folder (`plan`, `run --dry-run`), as text
 * or one line of JSON; resolves to the pipeline planned.
 */
export function printPlan(
  args: CommonArgs &
    Pick<
      PlanArgs,
      'pipeline' | 'param' | 'select' | 'reset' | 'repair' | 'accept-upstream' | 'verbose'
    >,
  io: CliIo,
  format: PlanArgs['format'],
): Promise<Pipeline> {
  // The files --repair removes are left out of the copy, as the run leaves them out (a bad one is refused below).
  const repaired = (commaList(args.repair) ?? []).filter(isDataFile).map(repairPath);
  return withFolder(
    outputTarget(args),
    io.env,
    async ({ folder: output, shown, files }) => {
      await checkFolderFormat(output, shown(output));
      const pipeline = await pipelineFromArgs(args, output, io);
      // The options `run` refuses, refused alike (exit 2, in the same words).
      const { selected, reused, resets } = checkRunOptions(pipeline, {
        select: commaList(args.select),
        reset: commaList(args.reset),
        acceptUpstream: commaList(args['accept-upstream']),
        repair: commaList(args.repair),
      });
      const folder = await openPlanFolder(output, files);
      try {
        const plan = await planRun(
          pipeline,
          output,
          { selected, reused },
          resets,
          folder,
          repaired,
        );
        const named = { ...plan, output: shown(output) };
        if (format === 'json') await writeOut(io.stdout, `${JSON.stringify(named)}\n`);
        else
          await writeOut(
            io.stdout,
            `${planLines(named, { verbose: args.verbose ?? true }).join('\n')}\n`,
          );
        return pipeline;
      } finally {
        folder.close();
      }
    },
    { without: new Set(repaired) },
  );
}
