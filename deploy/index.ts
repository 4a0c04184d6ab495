/**
 * The deploy room: `svc start --scale`. The configuration checked and made
 * into a spec (config.ts), the manifests built from it (manifests/), validated
 * against the Kubernetes schemas and a strict layer (validate/), the app's
 * image (image/), and the plan as printed (plan.ts).
 */
export { DeployConfigError, deploySpec, MAX_APP_NAME } from './config.ts';
export type { DeployInput } from './config.ts';
export { planText, redactSecrets, renderYaml, REDACTED, servedUrl } from './plan.ts';
export type { PlanSummary } from './plan.ts';
export { MANAGED_LABEL } from './spec.ts';
export type { Credential, DeploySpec, K8sObject } from './spec.ts';
export { assertValid, ManifestError, parseQuantity, schemaProblems, SUPPORTED_KINDS, validateManifests } from './validate/index.ts';
export type { ManifestProblem } from './validate/index.ts';
export { buildManifests, CHECKSUM_ANNOTATION, IMAGES } from './manifests/index.ts';
export { appImage } from './app-image.ts';
export type { AppImage } from './app-image.ts';
export { ImageError, IMAGE_ERRORS } from './image/index.ts';
export * from './cluster/index.ts';
