/**
 * What a command reads and writes of the process: its output streams and its
 * environment. `main` takes them as an argument, so that a command runs the same
 * in the bin (the process's own) and in a test (collected in memory).
 */
export type OutputStream = NodeJS.WritableStream & { isTTY?: boolean; columns?: number };

export interface CliIo {
  stdout: OutputStream;
  stderr: OutputStream;
  /** The environment that `${env.NAME}` in a definition reads. */
  env: Record<string, string | undefined>;
}

export function processIo(): CliIo {
  return { stdout: process.stdout, stderr: process.stderr, env: process.env };
}

/** Writes text, waiting for the stream to drain when its buffer is full. */
export async function writeOut(stream: OutputStream, text: string): Promise<void> {
  if (!stream.write(text)) await new Promise<void>((resolve) => stream.once('drain', resolve));
}
