import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { main } from '../../src/cli/main.js';

export const BIN = fileURLToPath(new URL('../../bin/road-etl.js', import.meta.url));
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** Kill with SIGKILL after this many ms (a safety net; default 120 s; a process only). */
  timeoutMs?: number;
  /** Run the built CLI as a child process (as users run it) instead of calling `main` in this one. */
  process?: boolean;
}

/** Starts `road-etl ARGS` as a child process (the built CLI, as users run it). */
export function startCli(args: string[], options: CliOptions = {}): ChildProcess {
  return spawn(process.execPath, [BIN, ...args], {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, NO_COLOR: '1', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** A stream that keeps what is written to it. */
class Collected extends Writable {
  text = '';
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

/**
 * Runs `road-etl ARGS` to the end and collects its output: `main` called in
 * this process with its own streams and environment (what the bin does, less
 * the exit), or, with `process` or another working folder, the built CLI as a
 * child process.
 */
export async function runCli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  if (options.process || (options.cwd && resolve(options.cwd) !== process.cwd())) {
    return collect(startCli(args, options), options.timeoutMs ?? 120_000);
  }
  const stdout = new Collected();
  const stderr = new Collected();
  const env = { ...process.env, NO_COLOR: '1', ...options.env };
  const code = await main(args, { stdout, stderr, env });
  return { code, signal: null, stdout: stdout.text, stderr: stderr.text };
}

export function collect(child: ChildProcess, timeoutMs = 120_000): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/**
 * How long `road-etl ARGS` takes, run whole as a process on this machine now
 * (ms): what a test that kills runs at random moments picks its moments in.
 * Throws when the run fails.
 */
export async function wholeRunMs(args: string[], options: CliOptions = {}): Promise<number> {
  const started = performance.now();
  const result = await collect(startCli(args, options), options.timeoutMs ?? 120_000);
  if (result.code !== 0)
    throw new Error(`road-etl ${args.join(' ')} exited ${String(result.code)}: ${result.stderr}`);
  return performance.now() - started;
}

/** The repair a failed run printed, as the arguments of road-etl (a command that runs as printed). */
export function printedRepair(stderr: string): string[] {
  const command = /repair the folder, run: road-etl (run .*?) \(it removes that file alone/.exec(
    stderr,
  )?.[1];
  expect(command, stderr).toBeDefined();
  return command!.split(' ');
}
