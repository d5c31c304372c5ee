/** Paths that definitions name: they must stay inside the folder they belong to. */
import { isAbsolute, relative, resolve, sep } from 'node:path';

/** Resolves `path` inside `root`; undefined when it is absolute or leaves root. */
export function insideFolder(root: string, path: string): string | undefined {
  if (path === '' || isAbsolute(path) || path.includes('\0')) return undefined;
  const full = resolve(root, path);
  const rel = relative(root, full);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) return undefined;
  return full;
}

/** The first segment of a path relative to its root (to refuse writing into .state). */
export function firstSegment(root: string, full: string): string {
  return relative(root, full).split(sep)[0] ?? '';
}
