// Types for the parts of tiny-json-http (which ships none) that the webhook uses.
// Its `timeout` option is left out on purpose: in 7.5 it throws on writes and
// on reads only sets an idle timer that nothing acts on, so callers bound
// requests themselves.

declare module 'tiny-json-http' {
  interface TinyRequest {
    url: string;
    headers?: Record<string, string>;
    /** Request body of a POST (JSON-encoded when the content type says JSON). */
    data?: unknown;
    /** Hand back the response body as bytes instead of parsing it. */
    buffer?: boolean;
  }

  interface TinyResponse {
    headers: Record<string, string | string[] | undefined>;
    body: unknown;
  }

  /** Rejects on network errors and on statuses outside 200..302. */
  function get(request: TinyRequest): Promise<TinyResponse>;
  function post(request: TinyRequest): Promise<TinyResponse>;

  const tiny: { get: typeof get; post: typeof post };
  export default tiny;
}
