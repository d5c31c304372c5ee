/**
 * The ground truth of a pipeline that reads both upstreams: every distinct
 * event, the current state built from them, and the measurements of a
 * selection over a period, each equal to the simulator's.
 */
import { expect } from 'vitest';
import type { Simulator } from '../../src/simulator/index.js';
import { idsWithPrefix, landedMeasurements, truthMeasurements } from './bicycle.js';
import { landedEventHashes, tableStateKeys, truthEventHashes, truthStateKeys } from './signs.js';

/** Events, `signs_current_state` and the measurements of `prefixes` over [start, end). */
export async function expectSignsAndBicycleTruth(
  simulator: Simulator,
  output: string,
  selection: { prefixes: readonly string[]; start: string; end: string },
): Promise<void> {
  expect(await landedEventHashes(output)).toEqual(truthEventHashes(simulator));
  expect(await tableStateKeys(output, 'signs_current_state')).toEqual(truthStateKeys(simulator));
  expect(await landedMeasurements(output)).toEqual(
    truthMeasurements(
      simulator,
      idsWithPrefix(simulator, ...selection.prefixes),
      selection.start,
      selection.end,
    ).kept,
  );
}
