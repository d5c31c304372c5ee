/** Writes bytes at increasing positions of a file through one buffer (positioned writes, no stream). */
import type { FileHandle } from 'node:fs/promises';

const WRITE_BUFFER = 4 * 1024 * 1024;

export class PositionedWriter {
  readonly #buffer: Uint8Array;
  #used = 0;
  #position: number;
  readonly #file: FileHandle;

  constructor(file: FileHandle, position: number, bufferBytes = WRITE_BUFFER) {
    this.#file = file;
    this.#position = position;
    this.#buffer = new Uint8Array(bufferBytes);
  }

  /** Where the next byte written goes. */
  get at(): number {
    return this.#position + this.#used;
  }

  /**
   * Copies `bytes` into the buffer when they fit, without waiting; false when
   * they do not (then `write` them). Spares a promise per small write.
   */
  put(bytes: Uint8Array): boolean {
    if (this.#used + bytes.length > this.#buffer.length) return false;
    this.#buffer.set(bytes, this.#used);
    this.#used += bytes.length;
    return true;
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
