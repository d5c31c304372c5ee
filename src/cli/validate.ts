/** `road-etl validate PIPELINE.yaml`: check a definition and print the plan; touch nothing. */
import type { Argv, CommandModule } from 'yargs';
import { describePlan } from '../pipeline/plan.js';
import {
  commaList,
  outputFolder,
  pipelineFromArgs,
  withPipelineArguments,
  type CommonArgs,
} from './common.js';
import { writeOut, type CliIo } from './io.js';

interface ValidateArgs extends CommonArgs {
  pipeline: string;
  param: string[];
  select: string[] | undefined;
}

export const validateCommand = (io: CliIo): CommandModule<object, ValidateArgs> => ({
  command: 'validate <pipeline>',
  describe: 'Check a pipeline definition and print the plan (touches nothing)',
  builder: (yargs: Argv) =>
    withPipelineArguments(yargs).option('select', {
      type: 'string',
      array: true,
      describe: 'Plan only these steps',
    }) as unknown as Argv<ValidateArgs>,
  handler: async (args) => {
    const output = outputFolder(args);
    const pipeline = await pipelineFromArgs(args, output, io, 'validate');
    const lines = await describePlan(pipeline, output, commaList(args.select));
    await writeOut(io.stdout, `${lines.join('\n')}\nThe definition is valid.\n`);
  },
});
