/**
 * Errors that road-etl expects and reports as a message (not a stack), each with
 * the exit code of the CLI contract: 2 for bad input (nothing written), 1 for a
 * run that failed (upstream or I/O trouble after retries).
 */
import { redactor } from './log.js';

export const EXIT_FAILED = 1;
export const EXIT_BAD_INPUT = 2;

export class RoadEtlError extends Error {
  override name = 'RoadEtlError';
  readonly exitCode: number = EXIT_FAILED;
}

/** A problem in a definition, a param or the command line. Exit 2, nothing written. */
export class InputError extends RoadEtlError {
  override name = 'InputError';
  override readonly exitCode = EXIT_BAD_INPUT;
  /** Every problem found, each `where: what` (the message lists them all). */
  readonly problems: readonly string[];

  constructor(problems: string | readonly string[], options?: ErrorOptions) {
    const list = typeof problems === 'string' ? [problems] : problems;
    super(
      list.length === 1 ? list[0]! : `${list.length} problems:\n  ${list.join('\n  ')}`,
      options,
    );
    this.problems = list;
  }
}

/**
 * The upstream a run is pointed at does not serve the data the output folder
 * holds (another service, another simulator, another acceptance host): exit 2,
 * nothing written; the message says how to start over.
 */
export class UpstreamChangedError extends InputError {
  override name = 'UpstreamChangedError';
}

/**
 * Bad configuration found when a service is first asked: an output bucket or
 * container that does not exist, credentials a store or the NDW login refuse,
 * credentials missing. Exit 2 (a scheduler's retry cannot help), nothing
 * written; the message says what to set.
 */
export class ConfigurationError extends InputError {
  override name = 'ConfigurationError';
}

/** A command-line mistake (unknown flag, missing argument): exit 2, with a pointer to --help. */
export class UsageError extends InputError {
  override name = 'UsageError';
}

/**
 * A run that failed: exit 1. Each cause has a class of its own below; a
 * RunError itself is a failure of the run's own work (a SQL statement, the
 * memory budget). Wrapping another error, it keeps it as `cause`.
 */
export class RunError extends RoadEtlError {
  override name = 'RunError';
}

/** The upstream refused or failed, after retries where they could help. Exit 1. */
export class UpstreamError extends RunError {
  override name = 'UpstreamError';
  readonly method: string;
  readonly url: string;
  readonly status: number | undefined;
  readonly bodyExcerpt: string;

  constructor(
    message: string,
    details: { method: string; url: string; status?: number | undefined; body?: string },
    options?: ErrorOptions,
  ) {
    const excerpt = excerptOf(details.body ?? '');
    const status = details.status === undefined ? '' : ` with status ${details.status}`;
    super(
      `${message}: ${details.method} ${details.url}${status}${excerpt ? `: ${excerpt}` : ''}`,
      options,
    );
    this.method = details.method;
    this.url = details.url;
    this.status = details.status;
    this.bodyExcerpt = excerpt;
  }
}

/** The upstream answered, but refuses what the run needs (a limit it will not go under). Exit 1. */
export class UpstreamRefusalError extends RunError {
  override name = 'UpstreamRefusalError';
}

/** road-etl's own state is unreadable or in use: a damaged checkpoint, a held lock. Exit 1. */
export class StateError extends RunError {
  override name = 'StateError';
}

/** Another run committed to the folder since this one read its commit: this commit is refused (exit 1). */
export class CommitConflictError extends StateError {
  override name = 'CommitConflictError';
}

/**
 * An object the folder's commit names that the store no longer has (removed
 * by something other than road-etl). Exit 1; the message names it.
 */
export class MissingObjectError extends StateError {
  override name = 'MissingObjectError';
  /** The folder's file the object holds (its key, where the two are one). */
  readonly path: string;
  constructor(
    readonly url: string,
    readonly key: string,
    options?: ErrorOptions & { repair?: string; path?: string; changed?: boolean },
  ) {
    super(
      `${url}${key}: the folder's last commit names this object, and the store ${options?.changed ? 'holds another one under its name (something other than road-etl wrote it)' : 'no longer has it (something other than road-etl removed it)'}; the folder is left as it was. Restore it from the store's versions or a backup${options?.repair ? `; or, to repair the folder, run: ${options.repair}` : ''}`,
      options,
    );
    this.path = options?.path ?? key;
    this.changed = options?.changed ?? false;
  }
  /** The store holds another object under the key than the commit names. */
  readonly changed: boolean;
}

/** The output folder is held by another live run. Exit 1. */
export class FolderInUseError extends StateError {
  override name = 'FolderInUseError';
}

/** Local I/O trouble: disk full, read-only folder, permissions. Exit 1. */
class LocalIoError extends RunError {
  override name = 'LocalIoError';
}

/** Data the upstream sent that DuckDB cannot read or type as a whole (not one bad record). Exit 1. */
export class DataError extends RunError {
  override name = 'DataError';
}

/** The run was stopped by a signal after finishing or abandoning its current unit. */
export class InterruptedError extends RoadEtlError {
  override name = 'InterruptedError';
  constructor(signal: string) {
    super(`Interrupted by ${signal}; finished work is kept, rerun to continue`);
  }
}

/** The first line of an error's message, for a message of one's own. */
export function firstLineOf(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!;
}

/**
 * One line of at most 300 characters of a response body, for messages: every
 * secret masked before anything is cut, so that no prefix of one survives.
 */
export function excerptOf(body: string, max = 300): string {
  const collapsed = redactor
    .text(body)
    // what looks like a credential in a JSON body is never shown
    .replace(/("[A-Za-z_]*(?:token|secret|password)[A-Za-z_]*"\s*:\s*)"[^"]*"/gi, '$1"***"')
    .replace(/\s+/g, ' ');
  const line = redactor
    .text(collapsed)
    // binary (a compressed or damaged body) shows as dots, not as noise
    // eslint-disable-next-line no-control-regex -- control characters are what is replaced
    .replace(/[\u0000-\u001f\u007f-\u009f\ufffd]+/g, '…')
    .trim();
  return line.length > max ? `${line.slice(0, max)}…` : line;
}

const IO_MESSAGES: Record<string, string> = {
  ENOSPC: 'the disk is full',
  EDQUOT: 'the disk quota is used up',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'the file system is read-only',
  EMFILE: 'too many open files',
  EISDIR: 'a folder is where a file must go',
  ENOTDIR: 'a file is where a folder must go',
};

/** The system's words for those errors, as DuckDB passes them on in its IO errors. */
const IO_TEXTS: [RegExp, string][] = [
  [/No space left on device/i, 'ENOSPC'],
  [/Disk quota exceeded/i, 'EDQUOT'],
  [/Read-only file system/i, 'EROFS'],
  [/Permission denied/i, 'EACCES'],
  [/Too many open files/i, 'EMFILE'],
];

/**
 * Turns a file-system error (from Node, or an IO error from DuckDB) into a
 * LocalIoError that says what happened where; other errors pass.
 */
export function explainIoError(error: unknown, doing: string): Error {
  if (error instanceof RoadEtlError) return error;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code === 'string' && code in IO_MESSAGES) {
    // A copy names both files: the one it could not write is the destination.
    const { path: source, dest } = error as NodeJS.ErrnoException & { dest?: string };
    const path = dest ?? source;
    return new LocalIoError(`${doing}: ${IO_MESSAGES[code]}${path ? ` (${path})` : ''}`, {
      cause: error,
    });
  }
  const message = error instanceof Error ? error.message : String(error);
  if (/^IO Error:/.test(message)) {
    const known = IO_TEXTS.find(([text]) => text.test(message));
    if (known) {
      return new LocalIoError(`${doing}: ${IO_MESSAGES[known[1]]} (${message.split('\n')[0]})`, {
        cause: error,
      });
    }
  }
  return error instanceof Error ? error : new Error(String(error));
}

/** DuckDB's kinds of error that data can cause (not the SQL, the memory or the disk). */
const DATA_ERRORS = /^(Conversion|Invalid Input|Out of Range) Error:/;

/**
 * A DuckDB failure while reading or typing upstream data becomes a DataError
 * that says what was being read; any other error passes as it is.
 */
export function explainDataError(error: unknown, reading: string): unknown {
  if (error instanceof RoadEtlError || !(error instanceof Error)) return error;
  if (!DATA_ERRORS.test(error.message)) return error;
  return new DataError(`${reading} cannot be typed: ${error.message.split('\n')[0] ?? ''}`, {
    cause: error,
  });
}
