/** The S3 client the standard AWS variables describe, and what its answers need. */
import type { Readable } from 'node:stream';
import { S3Client, S3ServiceException } from '@aws-sdk/client-s3';

/** The client the standard AWS variables describe. */
export function s3Client(env: NodeJS.ProcessEnv): S3Client {
  // The SDK is pinned to releases that support Node 20 (package.json): its warning that later
  // releases will not is no news to a user of road-etl, and a line that is not JSON on stderr.
  process.env['AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'] ??= 'true';
  const endpoint = env['AWS_ENDPOINT_URL_S3'] ?? env['AWS_ENDPOINT_URL'];
  const accessKeyId = env['AWS_ACCESS_KEY_ID'];
  const secretAccessKey = env['AWS_SECRET_ACCESS_KEY'];
  return new S3Client({
    // The variables of the run's environment; without them, the SDK's own chain (profiles, roles).
    ...(accessKeyId && secretAccessKey
      ? {
          credentials: {
            accessKeyId,
            secretAccessKey,
            ...(env['AWS_SESSION_TOKEN'] ? { sessionToken: env['AWS_SESSION_TOKEN'] } : {}),
          },
        }
      : {}),
    region: env['AWS_REGION'] ?? env['AWS_DEFAULT_REGION'] ?? 'us-east-1',
    ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
    // A connection that is not made, or an answer that stops coming, ends the request
    // (then retried by the SDK) instead of holding the run.
    requestHandler: { connectionTimeout: 30_000, socketTimeout: 120_000 },
    // Checksums only where S3 requires them: S3-compatible servers do not all know the newer ones.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

/** S3's error codes that say the configuration is wrong, with what to fix. */
const CONFIGURATION: Record<string, string> = {
  NoSuchBucket: 'the bucket does not exist: create it, or correct the bucket in --output',
  AccessDenied:
    'access denied: give the credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, a role) read, write, list and delete rights on the bucket and prefix',
  AllAccessDisabled: 'access to the bucket is disabled: use another bucket',
  InvalidAccessKeyId: 'the access key id is not known to the store: correct AWS_ACCESS_KEY_ID',
  SignatureDoesNotMatch:
    'the store refuses the signature: correct AWS_SECRET_ACCESS_KEY (and AWS_REGION)',
  InvalidToken: 'the session token is not valid: renew AWS_SESSION_TOKEN',
  ExpiredToken: 'the session token has expired: renew AWS_SESSION_TOKEN',
  AuthorizationHeaderMalformed: 'the store refuses the request: correct AWS_REGION for the bucket',
  PermanentRedirect: 'the bucket is in another region: set AWS_REGION to it',
  CredentialsProviderError:
    'no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or a profile or role the AWS SDK finds)',
};

/** What to fix, when an S3 error says the configuration is wrong (not trouble that passes). */
export function configurationFault(error: unknown): string | undefined {
  const name = error instanceof Error ? error.name : '';
  const code = error instanceof S3ServiceException ? (error as { Code?: string }).Code : undefined;
  const found = CONFIGURATION[code ?? ''] ?? CONFIGURATION[name];
  if (found) return found;
  if (statusOf(error) === 403)
    return 'the store refuses the credentials (403): check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and their rights on the bucket';
  return undefined;
}

export function statusOf(error: unknown): number | undefined {
  return error instanceof S3ServiceException ? error.$metadata.httpStatusCode : undefined;
}

/** A body read whole. */
export async function collect(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
