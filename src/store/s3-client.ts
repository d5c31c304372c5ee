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

export function statusOf(error: unknown): number | undefined {
  return error instanceof S3ServiceException ? error.$metadata.httpStatusCode : undefined;
}

/** A body read whole. */
export async function collect(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
