/**
 * The fingerprint of a folder's files (a partition's): each file's name and
 * content (the SHA-256 its writer or the folder's commit records), so that
 * any rewrite with other bytes shows, wherever the folder was copied, fetched
 * or put since.
 */
import { createHash } from 'node:crypto';
import { basename } from 'node:path';

/**
 * The fingerprint of a folder's files: the SHA-1 of a line of name and
 * content for each (undefined: none is there).
 */
export function fingerprint(
  files: readonly string[],
  content: (file: string) => string | undefined,
): string | undefined {
  let text = '';
  for (const file of files) {
    const sha256 = content(file);
    if (sha256 !== undefined) text += `${basename(file)}:${sha256}\n`;
  }
  if (text === '') return undefined;
  return createHash('sha1').update(text).digest('hex');
}
