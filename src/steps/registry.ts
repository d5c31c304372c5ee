/** Every step kind road-etl knows. Sources and sinks never import each other; they meet here. */
import { bicycleLocationsStep } from './bicycle-locations-step.js';
import { bicycleMeasurementsStep } from './bicycle-measurements-step.js';
import { exportStep } from './export-step.js';
import { signsEventsStep } from './signs-events-step.js';
import { signsLiveStep } from './signs-live-step.js';
import { signsSnapshotStep } from './signs-snapshot-step.js';
import { sqlStep } from './sql-step.js';
import type { StepKind } from './step-kind.js';

// Kinds take their own options types; the engine handles them as unknown.
export const STEP_KINDS: ReadonlyMap<string, StepKind> = new Map(
  (
    [
      bicycleLocationsStep,
      bicycleMeasurementsStep,
      signsEventsStep,
      signsSnapshotStep,
      signsLiveStep,
      sqlStep,
      exportStep,
    ] as unknown as StepKind[]
  ).map((kind) => [kind.kind, kind]),
);
