/**
 * A leak matrix: the NDW password and the bearer token, echoed back by a
 * troubled service in every form an echo takes (as sent, form- and
 * percent-encoded, JSON-escaped as JavaScript, Python and PHP write it,
 * base64, whitespace collapsed as a page shows it, cut across the excerpt's
 * 300 characters, the Authorization header in an error page). No form, and no
 * prefix of one, may appear in stdout, stderr, the folder (its manifest and
 * state included) or the report.
 */
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { encodeHTML, encodeXML } from 'entities';
import { describe, expect, it } from 'vitest';
import { BICYCLE_PATHS, TOKEN_PATH } from '../../src/endpoints.js';
import { measurementsPipeline } from '../helpers/bicycle.js';
import { runCli } from '../helpers/cli.js';
import { useProxy } from '../helpers/proxy.js';
import { useSimulator } from '../helpers/simulator.js';
import { pipelineProject } from '../helpers/tmp.js';

const USERNAME = 'svc-forms';
// Non-ASCII, a slash, runs of whitespace, what URLs, forms and HTML escape.
const PASSWORD = `Pä$s  wörd/+%&x=1\tend-"Q'9<`;
const simulator = await useSimulator({
  seed: 63,
  bicycle: { locations: 6 },
  auth: { username: USERNAME, password: PASSWORD },
});
const proxy = await useProxy(simulator.env.ROAD_ETL_BICYCLE_URL);
const env = proxy.env({ ...simulator.env });

/** JSON's escape of what is not printable ASCII, as Python (lower case) and PHP write it. */
const asciiJson = (text: string) =>
  JSON.stringify(text).replace(
    /[^\x20-\x7e]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const base64 = (text: string) => Buffer.from(text).toString('base64');
/** HTML-escaped as a server's templates write it: `&amp;`, `&quot;`, `&#39;`, and non-ASCII as `&#252;`. */
const htmlDecimal = (text: string) =>
  text.replace(
    /[&<>"']|[^\t -~]/g,
    (c) =>
      ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ??
      `&#${c.codePointAt(0)!};`,
  );

/** Every form of a secret the matrix looks for, and the first 8 characters of each. */
function formsOf(secret: string): string[] {
  const forms = [
    secret,
    encodeURIComponent(secret),
    form({ s: secret }).slice(2),
    JSON.stringify(secret).slice(1, -1),
    asciiJson(secret).slice(1, -1),
    asciiJson(secret).slice(1, -1).replace(/\//g, '\\/'),
    base64(secret),
    base64(`${USERNAME}:${secret}`),
    htmlDecimal(secret),
    encodeHTML(secret),
    encodeXML(secret),
  ];
  const collapsed = [...forms, ...forms.map((f) => f.replace(/\s+/g, ' '))];
  const normal = [...collapsed, ...collapsed.map((f) => f.normalize('NFD'))];
  return [...new Set([...normal, ...normal.map((f) => f.slice(0, 8))])];
}

/** The echoes of the token endpoint: the form it was sent, each way a service echoes it. */
const ECHOES: [string, (body: string) => string][] = [
  ['as sent', (body) => `Bad request body: ${body}`],
  ['its fields as JSON (JavaScript)', (body) => JSON.stringify({ got: Object.fromEntries(new URLSearchParams(body)) })],
  ['its fields as JSON (Python, ensure_ascii)', (body) => `{"got": ${asciiJson(new URLSearchParams(body).get('password')!)}}`],
  ['its fields as JSON (PHP, escaped slashes)', (body) => `{"got":${asciiJson(new URLSearchParams(body).get('password')!).replace(/\//g, '\\/')}}`],
  ['the password percent-encoded in a link', (body) => `<a href="/retry?p=${encodeURIComponent(new URLSearchParams(body).get('password')!)}">retry</a>`],
  ['Basic auth of the pair', (body) => `Authorization: Basic ${base64(`${USERNAME}:${new URLSearchParams(body).get('password')!}`)}`],
  ['a page with its whitespace collapsed', (body) => `<p>login failed for ${new URLSearchParams(body).get('password')!.replace(/\s+/g, ' ')}</p>`],
  ['the password HTML-escaped in a login page (decimal references)', (body) => `<input name="password" value="${htmlDecimal(new URLSearchParams(body).get('password')!)}">`],
  ['the password HTML-escaped with named references', (body) => `<p>${encodeHTML(new URLSearchParams(body).get('password')!)}</p>`],
  ['the password HTML-escaped with hexadecimal references', (body) => `<p>${encodeXML(new URLSearchParams(body).get('password')!)}</p>`],
  ['the password in Unicode NFD', (body) => `login failed for ${new URLSearchParams(body).get('password')!.normalize('NFD')}`],
  ['the password across the 300th character', (body) => `${'x'.repeat(292)}${new URLSearchParams(body).get('password')!} and more`],
]; // prettier-ignore

/** stdout, stderr, and every file of the folder and of its report. */
async function places(output: string, streams: string[]): Promise<string[]> {
  const found = [...streams];
  const entries = await readdir(output, { recursive: true, withFileTypes: true }).catch(() => []);
  for (const entry of entries)
    if (entry.isFile())
      found.push((await readFile(join(entry.parentPath, entry.name))).toString('utf8'));
  return found;
}

describe('secrets echoed back in every form', () => {
  it.each(ECHOES)('the token endpoint echoes %s: no form of the password anywhere', async (_name, as) => {
    const { file, output } = await pipelineProject(
      measurementsPipeline({ start: '2026-10-01T00:00:00Z', end: '2026-10-02T00:00:00Z', prefixes: ['GAL'], retries: 0 }),
    );
    proxy.spoil(TOKEN_PATH, { kind: 'echo', status: 500, as }, 1000);
    const run = await runCli(['run', file, '--output', output, '--log-format', 'json'], { env });
    proxy.clear();
    expect(run.code).toBe(1);
    // The echo reached road-etl: the username beside the password is in the message.
    expect(run.stderr + run.stdout).toMatch(/got|Bad request body|retry|Basic|login failed|xxxx|<input|<p>/);
    const report = await runCli(['report', '--output', output], { env });
    const texts = await places(output, [run.stdout, run.stderr, report.stdout, report.stderr]);
    for (const secret of formsOf(PASSWORD))
      for (const text of texts) expect(text.includes(secret), secret).toBe(false);
  }); // prettier-ignore

  it('a bearer token echoed in an error page: masked, and the run fails naming the endpoint', async () => {
    const { file, output } = await pipelineProject(
      measurementsPipeline({ start: '2026-10-01T00:00:00Z', end: '2026-10-02T00:00:00Z', prefixes: ['GAL'], retries: 0 }),
    );
    const tokens: string[] = [];
    proxy.spoil(BICYCLE_PATHS.measurements, {
      kind: 'echo',
      status: 500,
      as: (_body, headers) => {
        tokens.push(String(headers['authorization']).replace(/^Bearer /, ''));
        return `<h1>500</h1><pre>${String(headers['authorization'])}</pre>`;
      },
    }, 1000);
    const run = await runCli(['run', file, '--output', output, '--log-format', 'json'], { env });
    proxy.clear();
    expect(run.code).toBe(1);
    expect(tokens.length).toBeGreaterThan(0);
    expect(run.stdout.trim().split('\n').at(-1)).toMatch(/bicycle-data with status 500: <h1>500<\/h1><pre>Bearer \*\*\*<\/pre>/);
    const texts = await places(output, [run.stdout, run.stderr]);
    for (const token of tokens)
      for (const secret of [token, token.slice(0, 16), base64(token)])
        for (const text of texts) expect(text.includes(secret)).toBe(false);
  }); // prettier-ignore
});
