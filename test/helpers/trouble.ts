/**
 * Trouble made real for the reliability tests: a signal sent while a given step
 * is at work, and shell scripts run in a mount namespace of their own (tmpfs
 * disks, read-only bind mounts), so that nothing is simulated inside road-etl.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { BIN, collect, startCli, type CliResult } from './cli.js';

/**
 * Runs `road-etl run FILE --output OUTPUT` and sends `signal` a moment (0 to
 * `spreadMs`) after the first step that `starts` picks from the JSON log starts.
 */
export async function signalDuringStep(
  file: string,
  output: string,
  starts: (step: { step?: string; kind?: string }) => boolean,
  signal: NodeJS.Signals,
  env: Record<string, string | undefined>,
  spreadMs = 150,
): Promise<{ result: CliResult; sent: boolean }> {
  return signalAtEvent(
    file,
    output,
    (entry) => entry.event === 'step.start' && starts(entry),
    signal,
    env,
    spreadMs,
  );
}

/**
 * Runs `road-etl run FILE --output OUTPUT` and sends `signal` a moment (0 to
 * `spreadMs`) after the first JSON log line that `at` picks.
 */
export async function signalAtEvent(
  file: string,
  output: string,
  at: (entry: { event?: string; step?: string; kind?: string }) => boolean,
  signal: NodeJS.Signals,
  env: Record<string, string | undefined>,
  spreadMs = 150,
): Promise<{ result: CliResult; sent: boolean }> {
  const child = startCli(['run', file, '--output', output, '--log-format', 'json'], { env });
  let sent = false;
  let pending = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) {
      if (sent || !line.startsWith('{')) continue;
      const entry = JSON.parse(line) as { event?: string; step?: string; kind?: string };
      if (at(entry)) {
        sent = true;
        setTimeout(() => child.kill(signal), Math.floor(Math.random() * spreadMs));
      }
    }
  });
  const result = await collect(child);
  return { result, sent };
}

const execFileP = promisify(execFile);

/**
 * Runs a shell script in a private mount namespace (as root there), with NODE
 * and CLI set; resolves to what it printed. Commands whose outcome matters
 * record their exit code themselves.
 */
export async function inMountNamespace(
  script: string,
  env: Record<string, string | undefined>,
): Promise<string> {
  const { stdout } = await execFileP('unshare', ['-rm', 'sh', '-c', script], {
    env: { ...process.env, ...env, NODE: process.execPath, CLI: BIN, NO_COLOR: '1' },
    maxBuffer: 1 << 24,
  });
  return stdout;
}
