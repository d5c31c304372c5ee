/** The road-etl command line. */
import yargs from 'yargs';
import {
  EXIT_BAD_INPUT,
  EXIT_FAILED,
  InputError,
  RoadEtlError,
  UpstreamChangedError,
  UsageError,
} from '../errors.js';
import { redactor } from '../log.js';
import { VERSION } from '../version.js';
import { processIo, writeOut, type CliIo } from './io.js';
import { planCommand } from './plan.js';
import { queryCommand } from './query.js';
import { reportCommand } from './report.js';
import { printRefusedRun, runCommand } from './run.js';
import { schemaCommand } from './schema.js';
import { simulateCommand } from './simulate.js';
import { validateCommand } from './validate.js';

/**
 * Runs the CLI with argv (without node and script) on the process's streams and
 * environment, or on those given; resolves to the exit code (bin/road-etl.js
 * exits with it).
 */
export async function main(argv: string[], io: CliIo = processIo()): Promise<number> {
  // The secrets of an earlier command in this process (a test's) are not this one's.
  redactor.clear();
  const cli = yargs(argv)
    .scriptName('road-etl')
    .parserConfiguration({ 'camel-case-expansion': false })
    .usage('$0 <command> [options]\n\nBatch ETL for the Dutch national road-data APIs.')
    .command(runCommand(io))
    .command(validateCommand(io))
    .command(simulateCommand(io))
    .command(planCommand(io))
    .command(queryCommand(io))
    .command(reportCommand(io))
    .command(schemaCommand(io))
    .demandCommand(1, 'Name a command: run, validate, simulate, query or report.')
    .strict()
    .recommendCommands()
    .help()
    .alias('help', 'h')
    .version('version', 'Show the version of road-etl', VERSION)
    .alias('version', 'V')
    .wrap(Math.min(110, io.stdout.columns || 100))
    .fail((message: string | undefined, error: Error | undefined) => {
      if (error) throw error;
      throw new UsageError(message ?? 'Invalid command line');
    })
    .exitProcess(false);
  try {
    // yargs hands its own output (--help) to the callback instead of the console.
    let output = '';
    await cli.parseAsync(argv, {}, (_error, _args, text) => {
      output = text;
    });
    if (output) await writeOut(io.stdout, `${output}\n`);
    return 0;
  } catch (error) {
    printRefusedRun(argv, error, io);
    return report(error, io);
  }
}

function report(error: unknown, io: CliIo): number {
  if (error instanceof InputError) {
    const usage = error instanceof UpstreamChangedError ? '' : 'Run road-etl --help for usage.\n';
    io.stderr.write(`road-etl: ${redactor.text(error.message)}\n${usage}`);
    return EXIT_BAD_INPUT;
  }
  if (error instanceof RoadEtlError) {
    io.stderr.write(`road-etl: ${redactor.text(error.message)}\n`);
    return error.exitCode;
  }
  // Not an error road-etl expects: a bug. Show the stack so it can be reported.
  const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
  io.stderr.write(
    `road-etl: unexpected error (a bug; please report it):\n${redactor.text(text)}\n`,
  );
  return EXIT_FAILED;
}
