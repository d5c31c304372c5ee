/**
 * Upstream faults that pass, endpoint by endpoint: each fault twice in a row,
 * then a service that is well. The requests are retried (with backoff,
 * Retry-After honoured) and the run lands the ground truth.
 */
import { describe, expect, it } from 'vitest';
import type { FaultKind } from '../../src/simulator/faults.js';
import { runDefinition } from '../helpers/pipeline.js';
import { testDir } from '../helpers/tmp.js';
import { upstreamMatrix } from '../helpers/upstream.js';

const { simulator, env, CASES, clear } = await upstreamMatrix(2);

describe('upstream faults that pass', () => {
  it.each(CASES.map(([e, f, spec, fault]) => [f, e, spec, fault] as const))(
    '%s from %s: retried, and the run lands the ground truth',
    async (_fault, _endpoint, spec, { fault }) => {
      clear();
      const before = simulator.requests.length;
      simulator.inject({ ...fault, kind: fault.kind as FaultKind, path: spec.path, count: 2 });
      const dir = await testDir();
      const { summary, failure, output } = await runDefinition(dir, spec.pipeline, {}, { env });
      expect(summary.status, failure?.message).toBe('succeeded');
      const faulted = simulator.requests.slice(before).filter((r) => r.fault !== undefined);
      expect(faulted.length).toBe(2);
      await spec.truth(output);
    },
  );
});
