/**
 * A small work queue: items are taken one at a time from `next` and run with
 * at most `concurrency` at once. `next` may have nothing now and more later
 * (a running item can put work back): the queue waits for a running item to
 * end and asks again, and ends when `next` has nothing and nothing runs. The
 * first failure, or the signal, stops the taking; the running items settle
 * before the failure is thrown (an abort is left to the caller to report).
 */
export interface WorkQueue<T> {
  concurrency: number;
  /** The next item, or undefined when there is none now; `running` items are under way. */
  next(running: number): T | undefined;
  run(item: T): Promise<void>;
  signal?: AbortSignal;
}

export async function drain<T>(queue: WorkQueue<T>): Promise<void> {
  const running = new Set<Promise<void>>();
  // The first failure, boxed: it may be any value, undefined included.
  const stop: { failure?: { error: unknown } } = {};
  for (;;) {
    if (stop.failure || queue.signal?.aborted) break;
    if (running.size >= queue.concurrency) {
      await Promise.race(running);
      continue;
    }
    const item = queue.next(running.size);
    if (item === undefined) {
      if (running.size === 0) break;
      await Promise.race(running);
      continue;
    }
    const task: Promise<void> = queue
      .run(item)
      .catch((error: unknown) => {
        stop.failure ??= { error };
      })
      .finally(() => running.delete(task));
    running.add(task);
  }
  await Promise.allSettled([...running]);
  if (stop.failure) throw stop.failure.error;
}
