/**
 * Atomic file operations: a file is either wholly there or not at all. A run
 * writes in its own copy of the folder, which no reader sees and a crash
 * throws away: its files are made durable once, when the put lands them
 * (commitFileDurably, store/local-store.ts), not each time one is written.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync } from 'node:fs';
import { copyFile, mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * A temporary name for a file that will be renamed to `path`, in the folder
 * `scratch` (created if need be): a folder nobody reads, on the file system of
 * `path` so that the rename is atomic, so that a killed run leaves nothing
 * half-written beside the finished files. Hidden, and not ending like the
 * final name (so globs skip it even where scratch is the file's own folder).
 */
export function temporaryPath(path: string, scratch: string): string {
  mkdirSync(scratch, { recursive: true });
  return join(scratch, `.${basename(path)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
}

/**
 * Creates a folder and its parents (mkdir -p). Node's recursive mkdir answers
 * ENOENT where a folder cannot be made for another reason (a read-only file
 * system, no permission); the missing levels are then made one at a time, so
 * that the error says what really stands in the way.
 */
export async function makeFolder(path: string): Promise<void> {
  try {
    await mkdir(path, { recursive: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    const parent = dirname(path);
    if (parent !== path) await makeFolder(parent);
    await mkdir(path).catch((inner: unknown) => {
      if ((inner as NodeJS.ErrnoException).code !== 'EEXIST') throw inner;
    });
  }
}

export function isTemporaryName(name: string): boolean {
  // With a suffix: a scratch file of a writer's own beside its temporary (a GeoJSON's
  // features, a FlatGeobuf's buckets), left there when the run was killed.
  return /^\..+\.tmp-\d+-[0-9a-f]{8}(\.[a-z]+(-\d+)?)?$/.test(name);
}

async function fsyncPath(path: string, flags = 'r'): Promise<void> {
  const handle = await open(path, flags);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Moves a finished temporary file to its final name: a rename, or where the
 * temporary file is on another file system (a folder of the output mounted
 * apart), a copy beside `path` under its temporary name renamed in turn: the
 * final name appears whole or not at all.
 */
export async function commitFile(temporary: string, path: string): Promise<void> {
  try {
    await rename(temporary, path);
    return;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
  }
  const beside = join(dirname(path), basename(temporary));
  try {
    await copyFile(temporary, beside);
    await fsyncPath(beside);
    await rename(beside, path);
  } catch (error) {
    await rm(beside, { force: true });
    throw error;
  }
  await rm(temporary, { force: true });
}

/** Moves several finished temporary files to their final names (a unit of many small files). */
export async function commitFiles(
  moves: readonly (readonly [temporary: string, path: string])[],
): Promise<void> {
  for (const [temporary, path] of moves) await commitFile(temporary, path);
}

/**
 * Moves a finished temporary file to its final name durably: fsync the file,
 * rename, fsync the folder so that the rename survives a crash. For what lands
 * in a folder others read (a put's objects, its commit).
 */
export async function commitFileDurably(temporary: string, path: string): Promise<void> {
  await fsyncPath(temporary);
  await commitFile(temporary, path);
  await fsyncPath(dirname(path));
}

/**
 * Writes `path` atomically: `write` fills a temporary file in `scratch` (see
 * temporaryPath), which is then renamed into place (commitFile);
 * removed when anything fails. Resolves to what `write` resolved to.
 */
export async function writeThrough<T>(
  path: string,
  scratch: string,
  write: (temporary: string) => Promise<T>,
): Promise<T> {
  await makeFolder(dirname(path));
  const temporary = temporaryPath(path, scratch);
  try {
    const result = await write(temporary);
    await commitFile(temporary, path);
    return result;
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

/**
 * Writes data to path atomically (write, rename), by way of a temporary file
 * in `scratch` (see temporaryPath).
 */
export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  scratch: string,
): Promise<void> {
  await writeThrough(path, scratch, async (temporary) => {
    const handle = await open(temporary, 'wx');
    try {
      await handle.writeFile(data);
    } finally {
      await handle.close();
    }
  });
}

export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  // Through one reused buffer of 1 MB: a third less CPU than a stream's 64 kB chunks.
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.allocUnsafe(1 << 20);
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
    }
  } finally {
    await handle.close();
  }
  return hash.digest('hex');
}

export interface FileRecord {
  /** Path relative to the output folder, with forward slashes. */
  path: string;
  bytes: number;
  sha256: string;
}

/** A file as the manifest records it; `sha256` when the writer hashed the bytes as it wrote them. */
export async function describeFile(
  path: string,
  relativeTo: string,
  sha256?: string,
): Promise<FileRecord> {
  const info = await stat(path);
  return {
    path: path
      .slice(relativeTo.length + 1)
      .split('\\')
      .join('/'),
    bytes: info.size,
    sha256: sha256 ?? (await sha256File(path)),
  };
}

/**
 * Removes the temporary files below root: those of a step that failed, in the
 * run's own copy of the folder (no other process writes there).
 */
export async function removeTemporaryFiles(root: string): Promise<string[]> {
  const removed: string[] = [];
  async function walk(folder: string): Promise<void> {
    let entries;
    try {
      // Synchronously: a year of partitions is thousands of folders.
      entries = readdirSync(folder, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const path = join(folder, entry.name);
      if (isTemporaryName(entry.name)) {
        // a temporary file, or a temporary folder (partitions being written)
        await rm(path, { recursive: true, force: true });
        removed.push(path);
      } else if (entry.isDirectory()) await walk(path);
    }
  }
  await walk(root);
  return removed;
}

export async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The first and the last bytes of a file (up to 4 KiB each) and its last
 * non-blank byte, read without reading the rest: enough to tell what kind of
 * body a download holds, or where one that was cut short ends.
 */
export async function fileEnds(
  path: string,
): Promise<{ head: Buffer; tail: Buffer; size: number; last: number | undefined }> {
  const handle = await open(path, 'r');
  try {
    const { size } = await handle.stat();
    const edge = Math.min(size, 4096);
    const head = Buffer.alloc(edge);
    const tail = Buffer.alloc(edge);
    await handle.read(head, 0, edge, 0);
    await handle.read(tail, 0, edge, size - edge);
    return { head, tail, size, last: tail.findLast((byte) => byte > 0x20) };
  } finally {
    await handle.close();
  }
}

/** The start (or the end) of a file as text for a message, at most `bytes` of it; empty when it cannot be read. */
export async function fileExcerpt(
  path: string,
  end: 'start' | 'end',
  bytes = 300,
): Promise<string> {
  const ends = await fileEnds(path).catch(() => undefined);
  if (!ends) return '';
  const cut = ends.size > bytes;
  if (end === 'start') return ends.head.subarray(0, bytes).toString('utf8');
  return `${cut ? '…' : ''}${ends.tail.subarray(Math.max(0, ends.tail.length - bytes)).toString('utf8')}`;
}

/**
 * Why a file is not a whole JSON array of objects, judged by its ends: it must
 * start with "[" followed by "{" (or "]"), and end with "]". Undefined when it
 * looks right; the records themselves are checked by whoever parses them.
 */
export async function notAJsonArrayOfObjects(path: string): Promise<string | undefined> {
  const { head, last } = await fileEnds(path);
  const text = head.toString('latin1').trimStart();
  if (!text.startsWith('[')) return 'the body is not a JSON array';
  const next = text.slice(1).trimStart()[0];
  if (next !== undefined && next !== '{' && next !== ']')
    return 'the body is a JSON array of something other than objects';
  if (last !== 0x5d) return 'the body is cut short (no closing "]")';
  return undefined;
}

/** Those of `files` (paths in `root`) that are there. */
export async function filesThere(
  files: readonly FileRecord[],
  root: string,
): Promise<FileRecord[]> {
  const kept: FileRecord[] = [];
  for (const file of files) if (await exists(join(root, file.path))) kept.push(file);
  return kept;
}
