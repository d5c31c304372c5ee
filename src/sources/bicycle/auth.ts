/**
 * OAuth 2.0 tokens for the bicycle API (Keycloak password grant). The access
 * token is refreshed with the refresh token ahead of its expiry, and the
 * password grant is used again once the refresh token has expired too.
 * Concurrent callers share one token request: never a stampede of logins.
 * The password and every token are registered with the log redactor.
 */
import { ConfigurationError, UpstreamRefusalError } from '../../errors.js';
import type { HttpClient } from '../../http/client.js';
import { redactor } from '../../log.js';

export interface Credentials {
  authUrl: string;
  clientId: string;
  username: string;
  password: string;
}

interface Token {
  access: string;
  /** When the access token is renewed (ms): ahead of its expiry. */
  renewAt: number;
  refresh: string | undefined;
  /** When the refresh token expires (ms), less a margin. */
  refreshUntil: number;
}

/** Renew this long before a token expires (or at a quarter of its lifetime, if shorter). */
const MARGIN_MS = 60_000;

function margin(lifetimeMs: number): number {
  return Math.min(MARGIN_MS, lifetimeMs / 4);
}

export class TokenSource {
  readonly #http: HttpClient;
  readonly #credentials: Credentials;
  readonly #now: () => number;
  #token: Token | undefined;
  #pending: Promise<Token> | undefined;
  readonly counts = { logins: 0, refreshes: 0 };

  constructor(http: HttpClient, credentials: Credentials, now: () => number = Date.now) {
    this.#http = http;
    this.#credentials = credentials;
    this.#now = now;
    redactor.add(credentials.password, credentials.username);
  }

  /** A valid access token; concurrent callers wait for the same request. */
  async accessToken(signal?: AbortSignal): Promise<string> {
    const token = this.#token;
    if (token && this.#now() < token.renewAt) return token.access;
    return (await this.#renew(signal)).access;
  }

  /** The service refused `access` (401): the next caller gets a new token. */
  invalidate(access: string): void {
    if (this.#token?.access === access) this.#token = { ...this.#token, renewAt: 0 };
  }

  #renew(signal: AbortSignal | undefined): Promise<Token> {
    this.#pending ??= this.#request(signal).finally(() => {
      this.#pending = undefined;
    });
    return this.#pending;
  }

  async #request(signal: AbortSignal | undefined): Promise<Token> {
    const { clientId, username, password } = this.#credentials;
    const current = this.#token;
    if (current?.refresh && this.#now() < current.refreshUntil) {
      const refreshed = await this.#grant(
        { grant_type: 'refresh_token', client_id: clientId, refresh_token: current.refresh },
        signal,
      );
      if (refreshed) {
        this.counts.refreshes++;
        return (this.#token = refreshed);
      }
      // The refresh token was refused (the session ended): log in again.
    }
    const token = await this.#grant(
      { grant_type: 'password', client_id: clientId, username, password },
      signal,
      true,
    );
    this.counts.logins++;
    return (this.#token = token!);
  }

  /** One token request; undefined when a refresh is refused, an error when a login is. */
  async #grant(
    form: Record<string, string>,
    signal: AbortSignal | undefined,
    login = false,
  ): Promise<Token | undefined> {
    const started = this.#now();
    const { status, value } = await this.#http.json(
      {
        method: 'POST',
        url: this.#credentials.authUrl,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form).toString(),
        signal,
        pass: [400, 401, 403],
      },
      // A 200 that is no token (a gateway's answer, a cut body) is asked for again.
      (v) => {
        const token = (v as Record<string, unknown> | null)?.['access_token'];
        return typeof token === 'string' && token !== ''
          ? undefined
          : 'no access_token in the answer';
      },
    );
    const answer = (value ?? {}) as Record<string, unknown>;
    if (status !== 200) {
      if (!login) return undefined;
      const reason = [answer['error'], answer['error_description']]
        .filter((part) => typeof part === 'string')
        .join(': ');
      // Credentials the login refuses are bad configuration: a retry by the scheduler cannot help.
      throw new ConfigurationError(
        `Login to the bicycle API refused: POST ${this.#credentials.authUrl} answered ${status}${reason ? ` (${reason})` : ''}. Check ROAD_ETL_USERNAME, ROAD_ETL_PASSWORD and ROAD_ETL_CLIENT_ID`,
      );
    }
    const access = answer['access_token'];
    if (typeof access !== 'string' || access === '') {
      throw new UpstreamRefusalError(
        `The token endpoint POST ${this.#credentials.authUrl} answered 200 without an access_token`,
      );
    }
    redactor.add(access);
    const refresh =
      typeof answer['refresh_token'] === 'string' ? answer['refresh_token'] : undefined;
    if (refresh) redactor.add(refresh);
    const seconds = (name: string, fallback: number): number => {
      const v = answer[name];
      return typeof v === 'number' && v > 0 ? v * 1000 : fallback;
    };
    const accessLife = seconds('expires_in', 300_000);
    const refreshLife = seconds('refresh_expires_in', 0);
    return {
      access,
      renewAt: started + accessLife - margin(accessLife),
      refresh,
      refreshUntil: started + refreshLife - margin(refreshLife),
    };
  }
}
