/** The run's upstream: the definition's endpoints, or the simulator started in-process for the run. */
import { randomBytes } from 'node:crypto';
import type { Logger } from '../log.js';
import type { Upstream } from '../steps/step-kind.js';
import type { Pipeline } from './build.js';

export async function startUpstream(
  pipeline: Pipeline,
  logger: Logger,
): Promise<{ upstream: Upstream; simulator: { close(): Promise<void> } | undefined }> {
  if (!pipeline.simulator) return { upstream: pipeline.upstream, simulator: undefined };
  const { Simulator, SCALES } = await import('../simulator/index.js');
  const options = pipeline.simulator;
  const started = await Simulator.start(SCALES[options.scale], {
    seed: options.seed,
    now: options.now,
    signs: { signs: options.signs },
    bicycle: { locations: options.locations },
    // A password of its own: every secret is masked in what road-etl writes, and the
    // simulator's default ("demo") would mask that word wherever it appears.
    auth: { password: randomBytes(12).toString('base64url') },
  });
  const env = started.env;
  logger.log('info', 'simulator.started', `Embedded simulator at ${started.url}`, {
    url: started.url,
  });
  return {
    simulator: started,
    upstream: {
      signs: { url: env.ROAD_ETL_SIGNS_URL, v5Url: env.ROAD_ETL_SIGNS_V5_URL },
      bicycle: {
        url: env.ROAD_ETL_BICYCLE_URL,
        authUrl: env.ROAD_ETL_AUTH_URL,
        username: env.ROAD_ETL_USERNAME,
        password: env.ROAD_ETL_PASSWORD,
        clientId: env.ROAD_ETL_CLIENT_ID,
      },
    },
  };
}
