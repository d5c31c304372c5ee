/**
 * The fingerprint of a folder's files (a partition's): each file's name, size
 * and modification time to the millisecond, so that any rewrite shows, while a
 * copy that keeps times, as `cp -a`, `rsync -a` and a folder fetched from an
 * object store do, is known as the same.
 */
import { createHash } from 'node:crypto';
import { basename } from 'node:path';

/** A modification time in whole milliseconds (nearest): what a copy can set exactly again. */
export function mtimeMillis(mtimeNs: bigint): bigint {
  return (mtimeNs + 500_000n) / 1_000_000n;
}

/** A file's size and modification time: what its fingerprint is made of. */
export interface FileStat {
  size: bigint;
  mtimeNs: bigint;
}

/** A fingerprint longer than this (a partition of many files) is kept as its SHA-1. */
const LONGEST_PRINT = 240;

function sha1(text: string): string {
  return createHash('sha1').update(text).digest('hex');
}

/**
 * The fingerprint of a folder's files: a line of name, size and time for each,
 * or the SHA-1 of those lines when they are long (undefined: none is there).
 * Kept as text, so that a year of partitions costs no hash each.
 */
export function fingerprint(
  files: readonly string[],
  stat: (file: string) => FileStat | undefined,
) {
  let text = '';
  for (const file of files) {
    const info = stat(file);
    if (info) text += `${basename(file)}:${info.size}:${mtimeMillis(info.mtimeNs)}\n`;
  }
  if (text === '') return undefined;
  return text.length > LONGEST_PRINT ? sha1(text) : text;
}
