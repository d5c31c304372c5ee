/**
 * How the v1 kinds (signs.events, signs.snapshot) know their upstream: by the
 * feed's first event, which the service never changes. Both ask the same
 * question of the same host, once per check.
 */
import { feedDiffers, feedIdentity, type FeedIdentity } from '../sources/signs/identity.js';
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
  Options extends RequestOptions,
>(): UpstreamIdentityHooks<Options> {
  return {
    async identify(options, context) {
      const url = context.upstream.signs?.url;
      return url === undefined ? undefined : askFeed(options, context, url);
    },
    async check(options, context, stored) {
      const url = context.upstream.signs?.url;
      if (url === undefined) return undefined;
      const now = await context.once(`v1 feed ${url}`, () => askFeed(options, context, url));
      return feedDiffers(stored as FeedIdentity, now);
    },
  };
}
