/**
 * A Keycloak-like token endpoint: password and refresh_token grants, form
 * encoded, tokens that look like JWTs (clients must treat them as opaque), and
 * lifetimes that really expire.
 */
import { randomBytes } from 'node:crypto';
import type { AuthOptions } from './options.js';

export interface TokenAnswer {
  status: number;
  body: Record<string, unknown>;
}

interface Session {
  id: string;
  accessExpires: Map<string, number>;
}

function base64url(value: string | Buffer): string {
  return Buffer.from(value).toString('base64url');
}

export class TokenIssuer {
  readonly #options: AuthOptions;
  readonly #access = new Map<string, number>();
  readonly #refresh = new Map<string, { expires: number; session: Session }>();
  readonly counts = { passwordGrants: 0, refreshGrants: 0, rejected: 0 };

  constructor(options: AuthOptions) {
    this.#options = options;
  }

  /** The access and refresh tokens issued and not yet forgotten (tests look for them where they must not be). */
  issuedTokens(): string[] {
    return [...this.#access.keys(), ...this.#refresh.keys()];
  }

  /** Handles one form-encoded token request. */
  handle(form: URLSearchParams, nowMs = Date.now()): TokenAnswer {
    const grant = form.get('grant_type');
    const clientId = form.get('client_id');
    if (
      !clientId ||
      (this.#options.clientId !== undefined && clientId !== this.#options.clientId)
    ) {
      return this.#reject(401, 'invalid_client', 'Invalid client or Invalid client credentials');
    }
    if (grant === 'password') {
      const { username, password } = this.#options;
      if (form.get('username') !== username || form.get('password') !== password) {
        return this.#reject(401, 'invalid_grant', 'Invalid user credentials');
      }
      this.counts.passwordGrants++;
      return this.#issue({ id: randomBytes(16).toString('hex'), accessExpires: new Map() }, nowMs);
    }
    if (grant === 'refresh_token') {
      const token = form.get('refresh_token') ?? '';
      const known = this.#refresh.get(token);
      if (!known || known.expires <= nowMs) {
        return this.#reject(401, 'invalid_grant', 'Token is not active');
      }
      this.counts.refreshGrants++;
      return this.#issue(known.session, nowMs);
    }
    if (grant === null)
      return this.#reject(400, 'invalid_request', 'Missing form parameter: grant_type');
    return this.#reject(400, 'unsupported_grant_type', `Unsupported grant_type`);
  }

  /** True when the Authorization header carries a known, unexpired access token. */
  authorizes(header: string | undefined, nowMs = Date.now()): boolean {
    const match = /^Bearer ([\w.-]+)$/.exec(header ?? '');
    const expires = match ? this.#access.get(match[1]!) : undefined;
    return expires !== undefined && expires > nowMs;
  }

  #reject(status: number, error: string, description: string): TokenAnswer {
    this.counts.rejected++;
    return { status, body: { error, error_description: description } };
  }

  #token(kind: string, session: Session, expires: number): string {
    const header = base64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
    const claims = base64url(
      JSON.stringify({ typ: kind, sid: session.id, exp: Math.floor(expires / 1000) }),
    );
    return `${header}.${claims}.${base64url(randomBytes(24))}`;
  }

  #issue(session: Session, nowMs: number): TokenAnswer {
    const { accessTokenSeconds, refreshTokenSeconds } = this.#options;
    const accessExpires = nowMs + accessTokenSeconds * 1000;
    const refreshExpires = nowMs + refreshTokenSeconds * 1000;
    const access = this.#token('Bearer', session, accessExpires);
    const refresh = this.#token('Refresh', session, refreshExpires);
    this.#prune(nowMs);
    this.#access.set(access, accessExpires);
    this.#refresh.set(refresh, { expires: refreshExpires, session });
    return {
      status: 200,
      body: {
        access_token: access,
        expires_in: accessTokenSeconds,
        refresh_expires_in: refreshTokenSeconds,
        refresh_token: refresh,
        token_type: 'Bearer',
        'not-before-policy': 0,
        session_state: session.id,
        scope: 'profile email',
      },
    };
  }

  /** Forgets expired tokens so that a long run does not grow the maps. */
  #prune(nowMs: number): void {
    if (this.#access.size < 1000) return;
    for (const [token, expires] of this.#access) if (expires <= nowMs) this.#access.delete(token);
    for (const [token, { expires }] of this.#refresh)
      if (expires <= nowMs) this.#refresh.delete(token);
  }
}
