/** See ascii-comments.mjs: a bundle whose comments hold only ASCII, if the code then means the same (checked with esbuild's `transform`). */
/** See ascii-comments.mjs: comment lines made ASCII, unchecked (svc's own bundles). */
export declare function asciiCommentLines(code: string): string;
export declare function asciiComments(code: string, transform: (code: string, options: object) => Promise<{ code: string }>): Promise<string>;
