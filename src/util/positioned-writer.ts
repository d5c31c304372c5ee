/** Writes bytes at increasing positions of a file through one buffer (positioned writes, no stream). */
import type { FileHandle } from 'node:fs/promises';

const WRITE_BUFFER = 4 * 1024 * 1024;

export class PositionedWriter {
  readonly #buffer = new Uint8Array(WRITE_BUFFER);
  #used = 0;
  #position: number;
  readonly #file: FileHandle;

  constructor(file: FileHandle, position: number) {
    this.#file = file;
    this.#position = position;
  }

  /** Where the next byte written goes. */
  get at(): number {
    return this.#position + this.#used;
  }

  async write(bytes: Uint8Array): Promise<void> {
    if (this.#used + bytes.length > this.#buffer.length) await this.flush();
    if (bytes.length > this.#buffer.length) {
      await this.#file.write(bytes, 0, bytes.length, this.#position);
      this.#position += bytes.length;
      return;
    }
    this.#buffer.set(bytes, this.#used);
    this.#used += bytes.length;
  }

  async flush(): Promise<void> {
    if (this.#used === 0) return;
    await this.#file.write(this.#buffer, 0, this.#used, this.#position);
    this.#position += this.#used;
    this.#used = 0;
  }
}
