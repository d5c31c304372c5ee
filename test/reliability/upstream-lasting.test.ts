/**
 * Upstream faults that last, endpoint by endpoint: after one retry the run
 * stops with a clear error that names the endpoint, the status and an excerpt of
 * the body (exit code 1), leaves no partial file in any dataset, and a rerun
 * once the service is well again lands the ground truth.
 */
import { describe, expect, it } from 'vitest';
import { RoadEtlError } from '../../src/errors.js';
import type { FaultKind } from '../../src/simulator/faults.js';
import { runDefinition } from '../helpers/pipeline.js';
import { testDir } from '../helpers/tmp.js';
import { upstreamMatrix } from '../helpers/upstream.js';

const { simulator, env, CASES, leftovers, clear } = await upstreamMatrix(1);

describe('upstream faults that last', () => {
  it.each(CASES.map(([e, f, spec, fault]) => [f, e, spec, fault] as const))(
    '%s from %s: a clear error with endpoint, status and body, nothing partial, and a rerun completes',
    async (_fault, _endpoint, spec, { fault, shows }) => {
      clear();
      simulator.inject({ ...fault, kind: fault.kind as FaultKind, path: spec.path, count: 1000 });
      const dir = await testDir();
      const failed = await runDefinition(dir, spec.pipeline, {}, { env });
      clear();
      expect(failed.summary.status).toBe('failed');
      expect(failed.failure).toBeInstanceOf(RoadEtlError);
      expect((failed.failure as RoadEtlError).exitCode).toBe(1);
      const message = failed.failure!.message;
      expect(message).toContain(spec.path);
      expect(message).toMatch(shows);
      expect(await leftovers(failed.output)).toEqual([]);

      const rerun = await runDefinition(dir, spec.pipeline, {}, { env });
      expect(rerun.summary.status, rerun.failure?.message).toBe('succeeded');
      await spec.truth(rerun.output);
    },
    30_000,
  );
});
