/** How much two sets share: the size of their intersection over that of their union (1 when both are empty). */
export function jaccard(a: Iterable<string>, b: Iterable<string>): number {
  const left = new Set(a);
  const right = new Set(b);
  let shared = 0;
  for (const item of left) if (right.has(item)) shared++;
  const union = left.size + right.size - shared;
  return union === 0 ? 1 : shared / union;
}
