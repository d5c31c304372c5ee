/**
 * Before a run takes the output folder: each step that has read an upstream
 * before asks the upstream configured now whether it still serves the data the
 * folder holds (UpstreamIdentityHooks). A run never continues from another
 * upstream's data: pointed elsewhere, it is refused (exit 2, nothing written)
 * with both upstreams named and the --reset that starts over. An upstream that
 * cannot be asked now is no proof of anything: the run goes on, and meets it.
 */
import { UpstreamChangedError } from '../errors.js';
import type { Logger } from '../log.js';
import type { PlanContext, Upstream, UpstreamCheckContext } from '../steps/step-kind.js';
import type { PipelineStep } from './build.js';
import type { StateStore } from './state.js';

export async function checkUpstreams(
  steps: readonly PipelineStep[],
  context: {
    output: string;
    sqlDir: string;
    store: StateStore;
    /** Steps started over: their data goes, so whence it came does not matter. */
    resets: ReadonlySet<string>;
    upstream: Upstream;
    log: Logger;
    signal: AbortSignal;
  },
): Promise<void> {
  const probes = new Map<string, Promise<unknown>>();
  const once = <T>(key: string, probe: () => Promise<T>): Promise<T> => {
    let answer = probes.get(key) as Promise<T> | undefined;
    if (!answer) {
      answer = probe();
      probes.set(key, answer);
    }
    return answer;
  };
  const problems: { step: string; reason: string }[] = [];
  for (const step of steps) {
    const hooks = step.kind.upstreamIdentity;
    if (!hooks || context.resets.has(step.id)) continue;
    const record = await context.store.read(step.id);
    if (!record?.upstream) continue;
    const plan: PlanContext = {
      stepId: step.id,
      output: context.output,
      sqlDir: context.sqlDir,
      checkpoint: record.checkpoint,
    };
    const checking: UpstreamCheckContext = {
      ...plan,
      upstream: context.upstream,
      log: context.log,
      signal: context.signal,
      once,
    };
    let reason: string | undefined;
    try {
      reason = await hooks.check(step.options, checking, record.upstream);
    } catch (error) {
      context.log.log(
        'warn',
        'upstream.unchecked',
        `${step.id}: could not ask the upstream whether it serves the data of ${context.output} (${(error as Error).message.split('\n')[0]!}); the run goes on`,
        { step: step.id },
      );
      continue;
    }
    if (reason) problems.push({ step: step.id, reason });
  }
  if (problems.length === 0) return;
  const steps_ = problems.map((p) => p.step).join(',');
  throw new UpstreamChangedError(
    `The data in ${context.output} came from another upstream than the one configured now:\n` +
      problems.map((p) => `  ${p.step}: ${p.reason}\n`).join('') +
      `A run does not continue from another upstream's data. Start over with --reset ${steps_} (their data is removed first), or write to another --output.`,
  );
}
