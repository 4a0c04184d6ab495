/**
 * What a check of the lint rules reports: a finding at a position of the
 * snippet, and the edits that fix it (for `auto_fix`).
 */

/** What an svc check found, at a position of the snippet. */
export interface Finding {
  start: number;
  rule: string;
  severity: 'error' | 'warning';
  message: string;
}

/** Replace the text from `start` to `end` of the snippet with `text`. */
export interface Edit {
  start: number;
  end: number;
  text: string;
}
