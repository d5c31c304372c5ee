export {
  Simulator,
  type SimulatorEnv,
  type RouteName,
  type RequestRecord,
  TOKEN_PATH,
} from './server.js';
export { World } from './world.js';
export {
  resolveSimulatorOptions,
  DEFAULT_SIMULATOR_OPTIONS,
  SCALES,
  type ScaleName,
  type SimulatorOptions,
  type SimulatorInput,
} from './options.js';
export { MEASUREMENT_CATEGORIES } from './bicycle/world.js';
export { CSV_COLUMNS } from './signs/payload.js';
export { liveState, liveMoment, type LiveApi, type LiveFeature } from './signs/live.js';
