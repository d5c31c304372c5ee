/**
 * The store an output names: `s3://BUCKET/PREFIX` (S3 or an S3-compatible
 * server), `az://CONTAINER/PREFIX` (Azure Blob Storage), or a local folder.
 */
import { resolve } from 'node:path';
import { InputError } from '../errors.js';
import { redactor } from '../log.js';
import { LocalStore } from './local-store.js';
import type { ObjectStore } from './store.js';

/** A store URL's parts: its scheme, its bucket or container, and the prefix (with a trailing `/`, or ''). */
interface StoreLocation {
  scheme: 's3' | 'az';
  name: string;
  prefix: string;
}

const STORE_FORMS = 's3://BUCKET/PREFIX or az://CONTAINER/PREFIX';

/**
 * Reads `s3://BUCKET/PREFIX` or `az://CONTAINER/PREFIX`; undefined for a URL
 * of another scheme or a path. A URL of a store's scheme that is not of that
 * form (`s3:///prefix`, `s3:/bucket`, a query string, a name the store would
 * refuse, a `..` in the prefix) is bad input: never a local folder by mistake.
 */
export function storeLocation(url: string): StoreLocation | undefined {
  const scheme = /^(s3|az):/i.exec(url)?.[1]?.toLowerCase() as 's3' | 'az' | undefined;
  if (scheme === undefined) return undefined;
  const refuse = (why: string): never => {
    throw new InputError(`--output: ${url}: ${why}; give ${STORE_FORMS}`);
  };
  const m = /^[a-z0-9]+:\/\/([^/?#]*)\/?([^?#]*)$/i.exec(url);
  if (!m) {
    if (/[?#]/.test(url)) refuse('a store URL takes no query string or fragment');
    refuse(
      `a ${scheme}: URL starts with ${scheme}:// and the ${scheme === 's3' ? 'bucket' : 'container'}`,
    );
  }
  const name = m![1]!;
  if (name === '') refuse(`no ${scheme === 's3' ? 'bucket' : 'container'} is named`);
  if (scheme === 's3' && !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(name))
    refuse(`"${name}" is not an S3 bucket name`);
  if (scheme === 'az' && !/^[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]$/.test(name))
    refuse(`"${name}" is not an Azure container name`);
  const parts = m![2]!.split('/').filter((part) => part !== '');
  if (parts.some((part) => part === '.' || part === '..'))
    refuse('a prefix has no "." or ".." in it');
  return { scheme, name, prefix: parts.length === 0 ? '' : `${parts.join('/')}/` };
}

/** The bucket and prefix of an s3:// URL; undefined for anything else. */
export function s3Location(url: string): { bucket: string; prefix: string } | undefined {
  const at = storeLocation(url);
  return at?.scheme === 's3' ? { bucket: at.name, prefix: at.prefix } : undefined;
}

/** The container and prefix of an az:// URL; undefined for anything else. */
export function azureLocation(url: string): { container: string; prefix: string } | undefined {
  const at = storeLocation(url);
  return at?.scheme === 'az' ? { container: at.name, prefix: at.prefix } : undefined;
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

/**
 * The store `output` names. The S3 and Azure SDKs are loaded only for a URL
 * of theirs: together about half of the command's code, which every command
 * on a local folder would otherwise compile at its start.
 */
export async function openStore(output: string, env: NodeJS.ProcessEnv): Promise<ObjectStore> {
  registerSecrets(env);
  const s3 = s3Location(output);
  if (s3) {
    const [{ s3Client }, { S3Store }] = await Promise.all([
      import('./s3-client.js'),
      import('./s3-store.js'),
    ]);
    return new S3Store(s3Client(env), s3);
  }
  const azure = azureLocation(output);
  if (azure) {
    const { AzureStore, azureContainer } = await import('./azure-store.js');
    return new AzureStore(azureContainer(env, azure.container), azure);
  }
  return new LocalStore(resolve(output));
}
