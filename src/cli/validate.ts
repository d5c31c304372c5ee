/**
 * `road-etl validate PIPELINE.yaml`: check a definition and print the plan
 * (as text, or with --format json as one line of JSON for CI and schedulers);
 * touch nothing.
 */
import type { Argv, CommandModule } from 'yargs';
import { planLines, planRun, selectSteps } from '../pipeline/plan.js';
import {
  commaList,
  outputTarget,
  pipelineFromArgs,
  withPipelineArguments,
  type CommonArgs,
} from './common.js';
import { withFolder } from '../pipeline/session.js';
import { writeOut, type CliIo } from './io.js';
import { publicationWarnings } from '../pipeline/dataset-description.js';

interface ValidateArgs extends CommonArgs {
  pipeline: string;
  param: string[];
  select: string[] | undefined;
  format: 'text' | 'json';
}

export const validateCommand = (io: CliIo): CommandModule<object, ValidateArgs> => ({
  command: 'validate <pipeline>',
  describe: 'Check a pipeline definition and print the plan (touches nothing)',
  builder: (yargs: Argv) =>
    withPipelineArguments(yargs)
      .option('select', {
        type: 'string',
        array: true,
        describe: 'Plan only these steps',
      })
      .option('format', {
        choices: ['text', 'json'] as const,
        default: 'text' as const,
        describe:
          'text: the plan in words; json: the plan as one line of JSON (each step with its own plan: requests, ranges, downloads)',
      }) as unknown as Argv<ValidateArgs>,
  handler: (args) =>
    withFolder(outputTarget(args), io.env, async ({ folder: output }) => {
      const pipeline = await pipelineFromArgs(args, output, io, 'validate');
      const plan = await planRun(pipeline, output, selectSteps(pipeline, commaList(args.select)));
      if (args.format === 'json') await writeOut(io.stdout, `${JSON.stringify(plan)}\n`);
      else await writeOut(io.stdout, `${planLines(plan).join('\n')}\nThe definition is valid.\n`);
      // What a data portal will miss in the extracts' description, while it is unset.
      if (pipeline.steps.some((s) => s.kind.kind === 'export'))
        for (const warning of publicationWarnings(pipeline.publication))
          await writeOut(io.stderr, `warning: ${warning}\n`);
    }),
});
