/**
 * The sandbox room: previews of users' projects, each supervised by an actor
 * (README *Sandboxes*). Its door: `sandboxes()` for apps, the binding and
 * cleanup for the runtime, the catalogue of errors.
 */
import './providers.ts';

export { sandboxes, Sandboxes, currentSandboxes, bindSandboxes, defineSandboxKind, disabledEnv, sandboxEnv, sandboxRoot, setSandboxFallback, setRunnerFactory } from './api.ts';
export type { SandboxBinding, CreateSandbox, ExecCommandOptions, CommandChunk } from './api.ts';
export { cleanupSandboxes, reconcileSandboxes, startSandboxCleanup } from './cleanup.ts';
export type { CleanupReport } from './cleanup.ts';
export { checkSandboxSettings } from './providers.ts';
export { SANDBOX_ERRORS, sandboxError } from './errors.ts';
export type { SandboxErrorCode } from './errors.ts';
export { SandboxRecords, publicInfo, isActive } from './records.ts';
export { SANDBOX_KIND } from './supervisor.ts';
export type { SandboxEnv, SupervisorMsg } from './supervisor.ts';
export { bytesOf, coresOf, sandboxSettingsProblems } from './settings.ts';
export { appDir, logPath, READY_TEXT } from './project.ts';
export { localIsolation } from './isolation.ts';
export type { LocalIsolation } from './isolation.ts';
export { checkPath, SKIPPED_DIRS } from './paths.ts';
export type { SandboxState, SandboxType, SandboxRecord, SandboxInfo, SandboxSettings, SandboxPaths, ExecResult, Runner } from './types.ts';
export { PREVIEW_AUDIENCE, PreviewVerifier, signPreviewToken, verifyPreviewToken } from './preview-token.ts';
export type { PreviewClaims } from './preview-token.ts';
