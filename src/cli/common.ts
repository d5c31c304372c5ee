/** Options and helpers shared by the commands. */
import type { FolderTarget } from '../pipeline/session.js';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Argv } from 'yargs';
import { InputError } from '../errors.js';
import { storeLocation } from '../store/open.js';
import { createLogger, type LogLevel, type Logger } from '../log.js';
import { buildPipeline, type Pipeline } from '../pipeline/build.js';
import type { CliIo } from './io.js';

export interface CommonArgs {
  output: string;
  'log-format': 'text' | 'json' | undefined;
  'log-level': LogLevel;
}

export function withCommonOptions<T>(yargs: Argv<T>): Argv<T & CommonArgs> {
  return yargs
    .option('output', {
      type: 'string',
      default: 'output',
      describe: 'Output folder (a local path or file:// URL)',
    })
    .option('log-format', {
      choices: ['text', 'json'] as const,
      describe: 'Logs on stderr: text on a terminal, JSON lines otherwise (default)',
    })
    .option('log-level', {
      choices: ['debug', 'info', 'warn', 'error'] as const,
      default: 'info' as LogLevel,
      describe: 'Least important log level shown',
    }) as unknown as Argv<T & CommonArgs>;
}

/** The pipeline argument and its --param values, shared by run and validate. */
export function withPipelineArguments<T>(
  yargs: Argv<T>,
): Argv<T & CommonArgs & { pipeline: string; param: string[] }> {
  return withParamOption(withCommonOptions(yargs)).positional('pipeline', {
    type: 'string',
    demandOption: true,
    describe: 'Pipeline definition (YAML)',
  }) as unknown as Argv<T & CommonArgs & { pipeline: string; param: string[] }>;
}

function withParamOption<T>(yargs: Argv<T>): Argv<T & { param: string[] }> {
  return yargs.option('param', {
    type: 'string',
    array: true,
    default: [] as string[],
    describe: 'Set a pipeline param: --param k=v (repeatable)',
  });
}

/** Parses --param k=v values; a value may contain "=". */
function parseParamArgs(values: readonly string[]): Record<string, string> {
  const params: Record<string, string> = {};
  const problems: string[] = [];
  for (const value of values) {
    const match = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(value);
    if (!match) {
      problems.push(`--param ${JSON.stringify(value)}: expected NAME=VALUE`);
      continue;
    }
    if (match[1]! in params) problems.push(`--param ${match[1]!}: given twice`);
    params[match[1]!] = match[2]!;
  }
  if (problems.length > 0) throw new InputError(problems);
  return params;
}

/**
 * A URL (`s3://bucket/prefix`, `https://...`, `s3:/bucket`), not a path: a
 * scheme of two letters or more and a colon (`C:` stays a drive).
 */
const URL_LIKE = /^([a-z][a-z0-9+.-]+):/i;

/**
 * What --output names: a local folder (a path, or file://), or a folder in an
 * object store (`s3://BUCKET/PREFIX`, `az://CONTAINER/PREFIX`). Any other URL
 * is refused, never taken for a local path (`gs://b/p` would be a folder
 * `gs:/b/p` in the working directory, lost with an ephemeral worker's disk).
 */
export function outputTarget(args: CommonArgs): FolderTarget {
  if (args.output.trim() === '') throw new InputError('--output: must name a folder');
  const scheme = URL_LIKE.exec(args.output)?.[1]?.toLowerCase();
  if (scheme === 'file') {
    try {
      return { kind: 'local', folder: resolve(fileURLToPath(args.output)) };
    } catch (error) {
      throw new InputError(`--output: ${args.output}: ${(error as Error).message}`);
    }
  }
  // A store URL not of its form (no bucket, a query string) is bad input.
  if (storeLocation(args.output)) return { kind: 'store', url: args.output };
  if (scheme !== undefined)
    throw new InputError(
      `--output: ${args.output} is a ${scheme}: URL, and road-etl writes a local folder (a path, or file://) or an object store (s3://BUCKET/PREFIX, az://CONTAINER/PREFIX); a local folder whose name has a colon is given as ./${args.output}`,
    );
  return { kind: 'local', folder: resolve(args.output) };
}

export function loggerFor(args: CommonArgs, io: CliIo): Logger {
  const format = args['log-format'] ?? (io.stderr.isTTY ? 'text' : 'json');
  return createLogger({ format, level: args['log-level'], stream: io.stderr });
}

/** Splits comma lists given once or repeated: --select a,b --select c. */
export function commaList(values: readonly string[] | undefined): string[] | undefined {
  if (!values) return undefined;
  const items = values
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
  return items.length > 0 ? items : undefined;
}

/** Loads and checks the pipeline named on the command line, with its --param values. */
export function pipelineFromArgs(
  args: { pipeline: string; param: string[] },
  output: string,
  io: CliIo,
  purpose: 'run' | 'validate' = 'run',
): Promise<Pipeline> {
  return buildPipeline(args.pipeline, {
    params: parseParamArgs(args.param),
    env: io.env,
    output,
    purpose,
  });
}
