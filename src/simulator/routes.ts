/** What a route of the simulator answers from: the request, and the simulated world. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TokenIssuer } from './auth.js';
import type { SimulatorOptions } from './options.js';
import type { World } from './world.js';

export interface RouteRequest {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  body: Buffer;
  /** A fault cuts the answer short. */
  truncate: boolean;
  /** A fault gives the CSV download a row with a field too many. */
  ragged: boolean;
  world: World;
  options: SimulatorOptions;
  auth: TokenIssuer;
}
