/**
 * The share of `held` that `now` still has: its intersection over `held`'s size
 * (1 when `held` is empty). What `now` has beside it (growth) never lowers it.
 */
export function stillHeld(held: Iterable<string>, now: Iterable<string>): number {
  const before = new Set(held);
  const after = new Set(now);
  let kept = 0;
  for (const item of before) if (after.has(item)) kept++;
  return before.size === 0 ? 1 : kept / before.size;
}
