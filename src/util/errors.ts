/**
 * Every error chipc reports on purpose is a ChipcError: it carries a stable machine-readable
 * `code` (for `--json` output and tests) and a message that names the problem for a person.
 * The CLI maps ChipcError to exit status 2 ("error"); anything else is a bug and exits 3.
 */
export class ChipcError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ChipcError';
    this.code = code;
  }
}
