import { afterEach, describe, expect, it } from 'vitest';
import { redactor } from '../../src/log.js';

afterEach(() => redactor.clear());

const PASSWORD = 'p@ss w0rd/+%&x=1';
const USER = 'svc-user';

describe('redactor', () => {
  it.each([
    ['as it is', PASSWORD],
    ['form-encoded (a token request body)', 'p%40ss+w0rd%2F%2B%25%26x%3D1'],
    ['URL-encoded', encodeURIComponent(PASSWORD)],
    ['URL-encoded in lower-case hex', encodeURIComponent(PASSWORD).toLowerCase()],
    [
      'JSON-escaped',
      JSON.stringify('a"b\\c' + PASSWORD)
        .slice(1, -1)
        .slice(6),
    ],
    ['base64', Buffer.from(PASSWORD).toString('base64')],
    ['base64 of user:password (Basic auth)', Buffer.from(`${USER}:${PASSWORD}`).toString('base64')],
    ['form-encoded twice (an echo of an echo)', encodeURIComponent('p%40ss+w0rd%2F%2B%25%26x%3D1')],
  ])('masks the password %s', (_how, form) => {
    redactor.add(PASSWORD, USER);
    const text = `upstream said: grant_type=password&password=${form}&username=${USER}`;
    const masked = redactor.text(text);
    expect(masked).not.toContain(form);
    expect(masked).toContain('***');
    // The username is no secret: it stays.
    expect(masked).toContain(`username=${USER}`);
  });

  it('masks a password JSON-escaped (a body excerpt that quotes it)', () => {
    const password = 'pa"ss\\word';
    redactor.add(password, USER);
    const escaped = JSON.stringify(password).slice(1, -1);
    expect(escaped).not.toBe(password);
    expect(redactor.text(`{"password":"${escaped}"}`)).toBe('{"password":"***"}');
  });

  it('masks a token in its forms, and leaves ordinary text alone', () => {
    const token = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl';
    redactor.add(token);
    const text = `Bearer ${token} / ${Buffer.from(token).toString('base64')} / pipeline bicycle`;
    expect(redactor.text(text)).toBe('Bearer *** / *** / pipeline bicycle');
  });
});
