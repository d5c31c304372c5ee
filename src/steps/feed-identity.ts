/**
 * How the v1 kinds (signs.events, signs.snapshot) know their upstream: by the
 * feed's first event, which the service never changes; both ask the same
 * question of the same host, once per check. The event step also keeps the
 * history it holds where it goes on (the events of a recent instant), which
 * the service must still serve there: a copy that shares the feed's start but
 * grew otherwise does not.
 */
import {
  feedDiffers,
  feedHistoryDiffers,
  feedIdentity,
  landedFeedHistory,
  servedFeedHistory,
  type FeedIdentity,
} from '../sources/signs/identity.js';
import type { RequestOptions } from '../http/options.js';
import type { UpstreamCheckContext, UpstreamIdentityHooks } from './step-kind.js';

function askFeed(
  options: RequestOptions,
  context: Pick<UpstreamCheckContext, 'http' | 'signal'>,
  url: string,
): Promise<FeedIdentity> {
  return feedIdentity(context.http(options), url, context.signal);
}

export function feedIdentityHooks<
  Options extends RequestOptions & { town_code?: string | undefined },
>(withHistory = false): UpstreamIdentityHooks<Options> {
  return {
    async identify(options, context, accepted) {
      const url = context.upstream.signs?.url;
      if (url === undefined) return undefined;
      const identity = await askFeed(options, context, url);
      if (!withHistory) return identity;
      const landed = await landedFeedHistory(await context.database(), options.town_code);
      if (!landed) return identity;
      // Accepted as the data's service: where its history differs from the folder's, its own is kept.
      const history = accepted
        ? await servedFeedHistory(context.http(options), url, landed, context.signal)
        : landed;
      return { ...identity, history };
    },
    async check(options, context, stored) {
      const url = context.upstream.signs?.url;
      if (url === undefined) return undefined;
      const now = await context.once(`v1 feed ${url}`, () => askFeed(options, context, url));
      const differs = feedDiffers(stored as FeedIdentity, now);
      if (differs || !withHistory) return differs;
      return feedHistoryDiffers(context.http(options), url, stored as FeedIdentity, context.signal);
    },
  };
}
