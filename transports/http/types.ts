/** The request and response a transport hands the front, whatever the socket layer. */

export interface HttpRequest {
  /** Upper case. */
  method: string;
  /** Decoded path, without the query. */
  path: string;
  /** The raw query string (no `?`). */
  query: string;
  /** Lower-case names. */
  headers: Record<string, string>;
  /** The raw body (empty for GET). */
  body: Buffer;
  /** The client address (text), when the server was asked to fill it; otherwise empty. */
  remoteAddress: string;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  body: string | Buffer;
  /** Close the connection after this response (the server is draining). */
  close?: boolean;
}
