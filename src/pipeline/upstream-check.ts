/**
 * Before a run takes the output folder: each step that has read an upstream
 * before asks the upstream configured now whether it still serves the data the
 * folder holds (UpstreamIdentityHooks). A run never continues from another
 * upstream's data: pointed elsewhere, it is refused (exit 2, nothing written)
 * with both upstreams named and the --reset that starts over. An upstream that
 * fails the question after its retries, or answers it with nothing, is upstream
 * trouble (exit 1, nothing written); one that cannot be asked for another reason
 * (no network to it yet, say) is no proof of anything: the run goes on, and meets it.
 */
import { ConfigurationError, UpstreamChangedError, UpstreamError } from '../errors.js';
import { TokenSource } from '../sources/bicycle/auth.js';
import type { Logger } from '../log.js';
import type {
  PlanContext,
  StepContext,
  Upstream,
  UpstreamCheckContext,
} from '../steps/step-kind.js';
import { HttpClients, type RequestOptions } from '../http/options.js';
import type { PipelineStep } from './build.js';
import type { StateStore, StepState } from './state.js';

interface CheckScope {
  output: string;
  sqlDir: string;
  store: StateStore;
  /** Steps started over: their data goes, so whence it came does not matter. */
  resets: ReadonlySet<string>;
  /** Steps whose upstream the user says is the same (--accept-upstream): not asked, data kept. */
  accepted: ReadonlySet<string>;
  upstream: Upstream;
  log: Logger;
  signal: AbortSignal;
}

export async function checkUpstreams(
  steps: readonly PipelineStep[],
  context: CheckScope,
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
  const clients = new HttpClients(context.log);
  try {
    await loginFirst(steps, context, clients);
    for (const step of steps) {
      const reason = await checkStep(step, { ...context, once, http: clients.make });
      if (reason) problems.push({ step: step.id, reason });
    }
  } finally {
    await clients.close();
  }
  if (problems.length === 0) return;
  const steps_ = problems.map((p) => p.step).join(',');
  throw new UpstreamChangedError(
    `The data in ${context.output} came from another upstream than the one configured now:\n` +
      problems.map((p) => `  ${p.step}: ${p.reason}\n`).join('') +
      `A run does not continue from another upstream's data. Start over with --reset ${steps_} (their data is removed first), or write to another --output. ` +
      `If it is the same service all the same (its ids renumbered, a copy you mean to follow), keep the landed data and go on with --accept-upstream ${steps_}.`,
  );
}

/**
 * Logs in to the bicycle API once before the run takes the folder, when a
 * step will ask it: credentials the login refuses are bad configuration
 * (exit 2, nothing written), not a failed night for a scheduler to retry.
 * Trouble that passes is left for the step to meet.
 */
async function loginFirst(
  steps: readonly PipelineStep[],
  context: CheckScope,
  clients: HttpClients,
): Promise<void> {
  const upstream = context.upstream.bicycle;
  const step = steps.find(
    (s) => s.kind.source === 'bicycle' && (s.kind.asksUpstream?.(s.options) ?? true),
  );
  if (!upstream || !step) return;
  try {
    const http = clients.make(step.options as RequestOptions);
    await new TokenSource(http, upstream).accessToken(context.signal);
  } catch (error) {
    if (error instanceof ConfigurationError) throw error;
  }
}

/** Why `step`'s upstream no longer serves the folder's data; undefined when it does or cannot say. */
async function checkStep(
  step: PipelineStep,
  context: CheckScope & Pick<UpstreamCheckContext, 'once' | 'http'>,
): Promise<string | undefined> {
  const hooks = step.kind.upstreamIdentity;
  if (!hooks || context.resets.has(step.id)) return undefined;
  if (context.accepted.has(step.id)) {
    context.log.log(
      'warn',
      'upstream.accepted',
      `${step.id}: not asked whether its upstream serves the data of ${context.output} (--accept-upstream): its landed data is kept and continued`,
      { step: step.id },
    );
    return undefined;
  }
  const record = await context.store.read(step.id);
  if (!record?.upstream) return undefined;
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
    once: context.once,
    http: context.http,
  };
  try {
    return await hooks.check(step.options, checking, record.upstream);
  } catch (error) {
    // Refused credentials are bad configuration: exit 2, nothing written.
    if (error instanceof ConfigurationError) throw error;
    // A service that fails the question, or answers it with nothing, is in trouble: exit 1, nothing written.
    if (error instanceof UpstreamError) {
      context.log.log(
        'error',
        'upstream.check_failed',
        `${step.id}: the upstream failed the question whether it still serves the data of ${context.output}`,
        { step: step.id },
      );
      throw error;
    }
    context.log.log(
      'warn',
      'upstream.unchecked',
      `${step.id}: could not ask the upstream whether it serves the data of ${context.output} (${(error as Error).message.split('\n')[0]!}); the run goes on`,
      { step: step.id },
    );
    return undefined;
  }
}

/** Records what identifies the upstream's data a step has just read (for the next run's check). */
export async function identifyUpstream(
  step: PipelineStep,
  context: StepContext,
  state: StepState,
  logger: Logger,
  accepted: boolean,
): Promise<void> {
  const hooks = step.kind.upstreamIdentity;
  if (!hooks) return;
  try {
    state.identify(await hooks.identify(step.options, context, accepted));
  } catch (error) {
    // The data has landed; the next run checks against what was known before.
    logger.log(
      'warn',
      'upstream.unidentified',
      `${step.id}: could not record what identifies its upstream's data (${(error as Error).message.split('\n')[0]!})`,
      { step: step.id },
    );
  }
}
