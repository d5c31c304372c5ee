/**
 * The shape of a nested value, as SQL: what DuckDB's `hash` leaves out of
 * it. DuckDB hashes a list as the run of its items and a NULL struct as a
 * struct of NULLs (`hash([1, 2], [3]) = hash([1], [2, 3])`,
 * `hash([]) = hash(NULL)`, `hash(NULL::STRUCT(a INT)) = hash({'a': NULL})`),
 * so a row's fingerprint also hashes the length of each list, in order, and
 * whether each struct is NULL: an INTEGER[] from which the value's layout can
 * be read back. Costs about a tenth of hashing the value as text.
 */

/** A DuckDB type as DESCRIBE writes it, read far enough to find its lists and structs. */
type Shape =
  | { kind: 'list'; of: Shape }
  | { kind: 'struct'; fields: [name: string, type: Shape][] }
  | { kind: 'other'; nested: boolean };

class TypeReader {
  #at = 0;
  constructor(readonly text: string) {}

  #skipSpaces(): void {
    while (this.text[this.#at] === ' ') this.#at++;
  }

  /** A field name: plain, or in double quotes (doubled inside). */
  #name(): string {
    this.#skipSpaces();
    if (this.text[this.#at] !== '"') {
      const start = this.#at;
      while (this.#at < this.text.length && this.text[this.#at] !== ' ') this.#at++;
      return this.text.slice(start, this.#at);
    }
    let name = '';
    for (this.#at++; this.#at < this.text.length; this.#at++) {
      if (this.text[this.#at] === '"') {
        if (this.text[this.#at + 1] !== '"') break;
        this.#at++;
      }
      name += this.text.charAt(this.#at);
    }
    this.#at++;
    return name;
  }

  /** Skips a parenthesised part (type parameters, which may hold quoted text). */
  #skipParentheses(): void {
    let depth = 0;
    let quote: string | undefined;
    for (; this.#at < this.text.length; this.#at++) {
      const c = this.text[this.#at]!;
      if (quote) {
        if (c === quote) quote = undefined;
      } else if (c === "'" || c === '"') quote = c;
      else if (c === '(') depth++;
      else if (c === ')' && --depth === 0) {
        this.#at++;
        return;
      }
    }
  }

  read(): Shape {
    this.#skipSpaces();
    let shape: Shape;
    if (this.text.startsWith('STRUCT(', this.#at)) {
      this.#at += 'STRUCT('.length;
      const fields: [string, Shape][] = [];
      for (;;) {
        const name = this.#name();
        fields.push([name, this.read()]);
        this.#skipSpaces();
        if (this.text[this.#at++] !== ',') break;
      }
      shape = { kind: 'struct', fields };
    } else {
      const start = this.#at;
      while (this.#at < this.text.length && !',)[('.includes(this.text[this.#at]!)) this.#at++;
      const name = this.text.slice(start, this.#at).trim();
      if (this.text[this.#at] === '(') this.#skipParentheses();
      shape = { kind: 'other', nested: name === 'MAP' || name === 'UNION' };
    }
    while (this.text[this.#at] === '[') {
      const end = this.text.indexOf(']', this.#at);
      const fixed = end > this.#at + 1; // an ARRAY of fixed size
      this.#at = end + 1;
      shape = fixed ? { kind: 'other', nested: true } : { kind: 'list', of: shape };
    }
    return shape;
  }
}

/** Whether a shape holds a list or a struct (and so needs more than DuckDB's hash). */
function layered(shape: Shape): boolean {
  return shape.kind !== 'other';
}

/** The SQL of the INTEGER[] of lengths and NULL structs of `expression`, of `shape`. */
function shapeSql(expression: string, shape: Shape, depth: number): string {
  if (shape.kind === 'list') {
    const element = `e${depth}`;
    const inner = layered(shape.of)
      ? `, flatten(list_transform(${expression}, lambda ${element}: ${shapeSql(element, shape.of, depth + 1)}))`
      : '';
    return `list_concat([len(${expression})::INTEGER]${inner})`;
  }
  if (shape.kind === 'struct') {
    const fields = shape.fields
      .filter(([, type]) => layered(type))
      .map(([name, type]) =>
        shapeSql(`struct_extract(${expression}, '${name.replaceAll("'", "''")}')`, type, depth),
      );
    return `list_concat([(${expression} IS NULL)::INTEGER]${fields.map((f) => `, ${f}`).join('')})`;
  }
  throw new Error('a value without lists or structs has no shape');
}

/**
 * The shape of `ref` as separate values: a list's length, then, for a list
 * of structs, which of them are NULL (and the shapes inside them, as one
 * list); a struct's NULL, then its fields' shapes. Each part says how many
 * values the next holds, so that the run of them reads back one way.
 */
function shapeParts(ref: string, shape: Shape): string[] {
  if (shape.kind === 'list') {
    const parts = [`len(${ref})`];
    if (shape.of.kind === 'struct') {
      parts.push(`list_transform(${ref}, lambda e0: e0 IS NULL)`);
      if (shape.of.fields.some(([, type]) => layered(type)))
        parts.push(`flatten(list_transform(${ref}, lambda e0: ${shapeSql('e0', shape.of, 1)}))`);
    } else if (shape.of.kind === 'list')
      parts.push(`flatten(list_transform(${ref}, lambda e0: ${shapeSql('e0', shape.of, 1)}))`);
    return parts;
  }
  if (shape.kind === 'struct')
    return [
      `${ref} IS NULL`,
      ...shape.fields
        .filter(([, type]) => layered(type))
        .flatMap(([name, type]) =>
          shapeParts(`struct_extract(${ref}, '${name.replaceAll("'", "''")}')`, type),
        ),
    ];
  return [];
}

/**
 * What a fingerprint hashes for a column beside its values (all of them
 * before any value, so that the run reads back one way): the shape of a
 * list or struct, the value's text for a map, a union or an array of fixed
 * size (rare; their layout is not read here); nothing for another type.
 */
export function shapeOf(ref: string, type: string): string[] {
  const shape = new TypeReader(type).read();
  if (shape.kind === 'other') return shape.nested ? [`${ref}::VARCHAR`] : [];
  const nestedOther = (s: Shape): boolean =>
    s.kind === 'other'
      ? s.nested
      : s.kind === 'list'
        ? nestedOther(s.of)
        : s.fields.some(([, t]) => nestedOther(t));
  return nestedOther(shape) ? [`${ref}::VARCHAR`] : shapeParts(ref, shape);
}
