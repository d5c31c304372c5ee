/**
 * Logging: an event is a level, a stable dotted name (`step.end`,
 * `export.no_geometry`: what a reader of the JSON lines filters on), a message
 * for people and structured fields. On a TTY a human line printer, otherwise
 * (or with --log-format json) JSON lines on stderr; events under the level are
 * dropped. Every string passes through the redactor first, so a secret that
 * reaches a message is never printed.
 */

import { decodeHTML } from 'entities/decode';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, unknown>;

export interface LogEvent {
  level: LogLevel;
  event: string;
  message: string;
  fields: LogFields;
}

export interface Logger {
  log(level: LogLevel, event: string, message: string, fields?: LogFields): void;
  /** Whether a progress display makes sense (a human is watching). */
  readonly interactive: boolean;
}

const LEVELS: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Keys of structured values (log fields, manifest notes) whose strings are free text. */
const FREE_TEXT_KEYS = new Set(['error', 'message', 'reason', 'body', 'excerpt', 'detail']);

/**
 * Keeps secrets (passwords, tokens) out of what road-etl writes. Free text
 * (messages, errors, body excerpts) has every registered secret replaced with
 * ***; names, ids and paths are never touched, so that a secret that happens
 * to be an ordinary word does not mask a pipeline's name or a file's path.
 * A username is no secret and is not registered.
 */
class Redactor {
  readonly #secrets = new Set<string>();

  /** Forgets every secret: each command starts with none of its own (main). */
  clear(): void {
    this.#secrets.clear();
  }

  /**
   * Registers a secret in every form it travels in: as it is, URL- and
   * form-encoded (a token request's body, a query), JSON-escaped (a body
   * excerpt), base64 (Basic auth). A password (`user` given) also as the
   * Basic-auth pair `user:password`, and each form encoded once more (an echo
   * of an echo).
   */
  add(secret: string | undefined, user?: string): void {
    // Very short values would redact ordinary words; they are no real secrets.
    if (!secret || secret.length < 4) return;
    const forms = new Set(secretForms(secret));
    if (user !== undefined) {
      forms.add(base64(`${user}:${secret}`));
      for (const form of [...forms]) for (const again of secretForms(form)) forms.add(again);
    }
    // Unicode in either normal form (a page that decomposes `ü` into `u` and a combining mark).
    for (const form of [...forms]) for (const n of NORMAL_FORMS) forms.add(form.normalize(n));
    for (const form of forms) if (form.length >= 4) this.#secrets.add(form);
    // The longest first: a form that holds another is replaced whole.
    const sorted = [...this.#secrets].sort((a, b) => b.length - a.length);
    this.#secrets.clear();
    for (const form of sorted) this.#secrets.add(form);
  }

  /**
   * Free text with every secret replaced. Text that holds a secret only once
   * read as a browser reads it (HTML's character references decoded by the
   * `entities` library, whatever the encoder: `&amp;`, `&#39;`, `&#252;`,
   * `&uuml;`; Unicode composed) is given so read, with the secret replaced.
   */
  text(value: string): string {
    const out = this.#replaced(value);
    if (this.#secrets.size === 0 || !/&|[^ -~\t\n\r]/.test(out)) return out;
    const read = decodeHTML(out).normalize('NFC');
    const masked = this.#replaced(read);
    return masked === read ? out : masked;
  }

  #replaced(value: string): string {
    let out = value;
    for (const secret of this.#secrets) out = out.replaceAll(secret, '***');
    return out;
  }

  /**
   * A structured value (log fields, a manifest's notes): the strings under a
   * free-text key (`error`, `message`, `reason`, `body`, ...) are redacted, at
   * any depth; other strings (names, ids, paths, timestamps) are kept as they are.
   */
  value(value: unknown, key?: string): unknown {
    if (typeof value === 'string')
      return key !== undefined && FREE_TEXT_KEYS.has(key) ? this.text(value) : value;
    if (Array.isArray(value)) return value.map((v) => this.value(v, key));
    if (value && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.value(v, k)]));
    }
    return value;
  }
}

const NORMAL_FORMS = ['NFC', 'NFD'] as const;

const base64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');

/** JSON's escape of each UTF-16 unit outside printable ASCII (`\u00fc`), as Python and PHP write it. */
function asciiJson(json: string, upper: boolean): string {
  return json.replace(/[^\x20-\x7e]/g, (c) => {
    const hex = c.charCodeAt(0).toString(16).padStart(4, '0');
    return `\\u${upper ? hex.toUpperCase() : hex}`;
  });
}

/**
 * A secret as the echoes of a service give it: as it is; URL- and
 * form-encoded (lower-case hex escapes too); JSON-escaped as JavaScript,
 * Python (`\u00fc`) and PHP (`\/` too) write it; base64 (plain and URL-safe);
 * and each of these with its whitespace runs collapsed to one space, as an
 * excerpt or an HTML page shows text.
 */
function secretForms(secret: string): string[] {
  const url = encodeURIComponent(secret);
  const form = new URLSearchParams({ s: secret }).toString().slice(2);
  const json = JSON.stringify(secret).slice(1, -1);
  const lower = (text: string) => text.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase());
  const b64 = base64(secret);
  const jsons = [json, asciiJson(json, false), asciiJson(json, true)];
  const forms = [
    secret,
    url,
    lower(url),
    form,
    lower(form),
    ...jsons,
    ...jsons.map((j) => j.replace(/\//g, '\\/')),
    b64,
    b64.replace(/=+$/, ''),
    b64.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, ''),
  ];
  return [...forms, ...forms.map((f) => f.replace(/\s+/g, ' '))];
}

/** The process-wide redactor: credentials are registered as soon as they are read. */
export const redactor = new Redactor();

export interface StreamLoggerOptions {
  format: 'json' | 'text';
  level: LogLevel;
  stream: NodeJS.WritableStream & { isTTY?: boolean };
}

export function createLogger(options: StreamLoggerOptions): Logger {
  const min = LEVELS[options.level];
  return {
    interactive: options.format === 'text' && options.stream.isTTY === true,
    log(level, event, message, fields = {}) {
      if (LEVELS[level] < min) return;
      const safeMessage = redactor.text(message);
      const safeFields = redactor.value(fields) as LogFields;
      if (options.format === 'json') {
        options.stream.write(
          JSON.stringify({
            time: new Date().toISOString(),
            level,
            event,
            message: safeMessage,
            ...safeFields,
          }) + '\n',
        );
      } else {
        const tag = level === 'info' ? '' : `${level}: `;
        // On a terminal a progress line may be showing: clear it first.
        const clear = options.stream.isTTY === true ? '\r\x1b[2K' : '';
        options.stream.write(`${clear}${tag}${safeMessage}\n`);
      }
    },
  };
}

/** A logger that keeps events in memory (tests). */
export function createMemoryLogger(): Logger & { events: LogEvent[] } {
  const events: LogEvent[] = [];
  return {
    events,
    interactive: false,
    log(level, event, message, fields = {}) {
      events.push({
        level,
        event,
        message: redactor.text(message),
        fields: redactor.value(fields) as LogFields,
      });
    },
  };
}
