/**
 * Errors of the app's image (`svc start --scale --build`). Each has a stable
 * code, listed in docs/errors.md; none reaches an HTTP client (the status is
 * the catalogue's convention).
 */
import { SvcError } from '../../kernel/index.ts';

export const IMAGE_ERRORS = {
  SVC_ERR_IMAGE_CONTEXT: { status: 500, message: "the image's build context could not be staged" },
  SVC_ERR_IMAGE_CREDENTIALS: { status: 500, message: 'no container registry credentials: set SVC_REGISTRY_USERNAME and SVC_REGISTRY_PASSWORD in the environment or in the project\'s .env' },
  SVC_ERR_CONTAINER_CLI: { status: 500, message: 'no container CLI: docker does not answer `docker info` and podman is not on the PATH (set [scale.orchestrator] container_cli)' },
  SVC_ERR_IMAGE_LOGIN: { status: 500, message: 'the container registry refused the login' },
  SVC_ERR_IMAGE_BUILD: { status: 500, message: 'the image could not be built' },
  SVC_ERR_IMAGE_PUSH: { status: 500, message: 'the image could not be pushed' },
} as const;

export type ImageErrorCode = keyof typeof IMAGE_ERRORS;

/**
 * An error of the image: its `code` is one of {@link IMAGE_ERRORS}.
 *
 * @example
 * try { await buildAndPush(options); } catch (e) { if (e instanceof ImageError && e.code === 'SVC_ERR_IMAGE_CREDENTIALS') console.error(e.message); }
 */
export class ImageError extends SvcError {
  declare readonly code: ImageErrorCode;

  constructor(code: ImageErrorCode, message?: string, options?: { cause?: unknown; details?: unknown }) {
    super(code, message ?? IMAGE_ERRORS[code].message, { status: IMAGE_ERRORS[code].status, ...options });
    this.name = 'ImageError';
  }
}
