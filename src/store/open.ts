/**
 * The store an output names: `s3://BUCKET/PREFIX` (S3 or an S3-compatible
 * server), `az://CONTAINER/PREFIX` (Azure Blob Storage), or a local folder.
 */
import { resolve } from 'node:path';
import { InputError } from '../errors.js';
import { redactor } from '../log.js';
import { LocalStore } from './local-store.js';
import { s3Client } from './s3-client.js';
import { S3Store } from './s3-store.js';
import { AzureStore, azureContainer } from './azure-store.js';
import type { ObjectStore } from './store.js';

/** The bucket and prefix of an s3:// URL; undefined for anything else. */
export function s3Location(url: string): { bucket: string; prefix: string } | undefined {
  const m = /^s3:\/\/([^/]+)\/?(.*)$/i.exec(url);
  if (!m) return undefined;
  const bucket = m[1]!;
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket))
    throw new InputError(`--output: ${url}: "${bucket}" is not an S3 bucket name`);
  const prefix = m[2]!.replace(/\/+$/, '');
  return { bucket, prefix: prefix === '' ? '' : `${prefix}/` };
}

/** The container and prefix of an az:// URL; undefined for anything else. */
export function azureLocation(url: string): { container: string; prefix: string } | undefined {
  const m = /^az:\/\/([^/]+)\/?(.*)$/i.exec(url);
  if (!m) return undefined;
  const container = m[1]!;
  if (!/^[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]$/.test(container))
    throw new InputError(`--output: ${url}: "${container}" is not an Azure container name`);
  const prefix = m[2]!.replace(/\/+$/, '');
  return { container, prefix: prefix === '' ? '' : `${prefix}/` };
}

/**
 * The store's secrets, registered with the redactor before anything is asked
 * of it: the AWS secret key and session token, the Azure account key, and the
 * connection string with its key and signature.
 */
function registerSecrets(env: NodeJS.ProcessEnv): void {
  redactor.add(env['AWS_SECRET_ACCESS_KEY']);
  redactor.add(env['AWS_SESSION_TOKEN']);
  redactor.add(env['AZURE_STORAGE_KEY']);
  const connection = env['AZURE_STORAGE_CONNECTION_STRING'];
  redactor.add(connection);
  for (const part of connection?.split(';') ?? []) {
    const m = /^(AccountKey|SharedAccessSignature)=(.+)$/i.exec(part.trim());
    if (m) redactor.add(m[2]);
  }
}

export function openStore(output: string, env: NodeJS.ProcessEnv): ObjectStore {
  registerSecrets(env);
  const s3 = s3Location(output);
  if (s3) return new S3Store(s3Client(env), s3);
  const azure = azureLocation(output);
  if (azure) return new AzureStore(azureContainer(env, azure.container), azure);
  return new LocalStore(resolve(output));
}
