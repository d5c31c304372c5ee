/** The road-etl command line. */
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import {
  EXIT_BAD_INPUT,
  EXIT_FAILED,
  InputError,
  RoadEtlError,
  UpstreamChangedError,
  UsageError,
} from '../errors.js';
import { redactor } from '../log.js';
import { queryCommand } from './query.js';
import { reportCommand } from './report.js';
import { printRefusedRun, runCommand } from './run.js';
import { schemaCommand } from './schema.js';
import { simulateCommand } from './simulate.js';
import { validateCommand } from './validate.js';

/** Runs the CLI with argv (without node and script); resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
  const cli = yargs(argv)
    .scriptName('road-etl')
    .parserConfiguration({ 'camel-case-expansion': false })
    .usage('$0 <command> [options]\n\nBatch ETL for the Dutch national road-data APIs.')
    .command(runCommand)
    .command(validateCommand)
    .command(simulateCommand)
    .command(queryCommand)
    .command(reportCommand)
    .command(schemaCommand)
    .demandCommand(1, 'Name a command: run, validate, simulate, query or report.')
    .strict()
    .recommendCommands()
    .help()
    .alias('help', 'h')
    .version(false)
    .wrap(Math.min(110, process.stdout.columns || 100))
    .fail((message: string | undefined, error: Error | undefined) => {
      if (error) throw error;
      throw new UsageError(message ?? 'Invalid command line');
    })
    .exitProcess(false);
  try {
    await cli.parseAsync();
    return process.exitCode === undefined ? 0 : Number(process.exitCode);
  } catch (error) {
    printRefusedRun(argv, error);
    return report(error);
  }
}

function report(error: unknown): number {
  if (error instanceof InputError) {
    const usage = error instanceof UpstreamChangedError ? '' : 'Run road-etl --help for usage.\n';
    process.stderr.write(`road-etl: ${redactor.text(error.message)}\n${usage}`);
    return EXIT_BAD_INPUT;
  }
  if (error instanceof RoadEtlError) {
    process.stderr.write(`road-etl: ${redactor.text(error.message)}\n`);
    return error.exitCode;
  }
  // Not an error road-etl expects: a bug. Show the stack so it can be reported.
  const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.stderr.write(
    `road-etl: unexpected error (a bug; please report it):\n${redactor.text(text)}\n`,
  );
  return EXIT_FAILED;
}

const code = await main(hideBin(process.argv));
process.exit(code);
