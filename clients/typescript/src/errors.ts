/**
 * The errors a call raises: chronomem's own tree (`chronomem/errors.py`), class for class, so a
 * `catch` reads as it does in Python. The service sends an error as a problem document (RFC
 * 9457) naming its class in `error`; {@link fromProblem} turns it back into that class the way
 * the Python client does (`chronomem/client/__init__.py`, `_error`):
 *
 * - 401 and 403 are {@link AccessDeniedError} (no key, a bad or revoked key, too small a scope);
 * - `NotFound` (an unknown route, or a key of another space) is {@link NotFoundError};
 * - any other name of the tree is that class; a name outside it (`InternalError`,
 *   `PayloadTooLarge`, ...) or an answer that is not a problem is {@link ServiceError};
 * - no answer at all (refused connection, timeout, abort) is a {@link ServiceError} with status 0.
 *
 * Every error from an answer carries `status` (the HTTP status; 0 when there was none) and
 * `problem` (the document as sent). The structured context travels as in Python, under the same
 * names: `field`, `record_id`, `event_id`, `dependants`, `reasons`, the embedder's
 * `expected_model` / `expected_dim` / `got_model` / `got_dim`, and `upstream_status` for an
 * LLM endpoint's error status (Python's `LLMHTTPError.status`).
 *
 * ```
 * ChronomemError
 * ├── ConfigError
 * ├── InvalidInputError              field
 * ├── NotFoundError                  record_id, event_id
 * ├── ConflictError                  record_id
 * │   ├── DependentsExistError       dependants
 * │   └── CausalLinkError
 * │       ├── CauseAfterEffectError
 * │       └── CausalCycleError
 * ├── StoreError
 * │   └── StoreUnavailableError
 * ├── EmbedderError
 * │   ├── EmbedderMismatchError      expected_model, expected_dim, got_model, got_dim
 * │   ├── EmbedderHTTPError
 * │   ├── EmbedderTimeoutError
 * │   └── EmbedderResponseError
 * ├── ServiceError                   status
 * │   └── AccessDeniedError
 * ├── LLMError
 * │   ├── LLMHTTPError               upstream_status
 * │   ├── LLMTimeoutError
 * │   ├── LLMResponseError
 * │   ├── CitationError
 * │   ├── ExtractionError            reasons
 * │   └── ReflectionError            reasons
 * └── AnswerError                    an answer that is not what the call expects
 * ```
 */

/** A problem document as the service sends it (`server/problems.py`). */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  error: string;
  field: string | null;
  [member: string]: unknown;
}

/** Root of every error a call raises. */
export class ChronomemError extends Error {
  /** The HTTP status of the answer (0: there was none). */
  status = 0;
  /** The problem document the service sent, when it sent one. */
  problem: Problem | undefined = undefined;
  field: string | null = null;
  record_id: string | null = null;
  event_id: string | null = null;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

export class ConfigError extends ChronomemError {}
export class InvalidInputError extends ChronomemError {}
export class NotFoundError extends ChronomemError {}
export class ConflictError extends ChronomemError {}
export class DependentsExistError extends ConflictError {
  /** What depends on the record (`relation:record_id`). */
  dependants: string[] = [];
}
export class CausalLinkError extends ConflictError {}
export class CauseAfterEffectError extends CausalLinkError {}
export class CausalCycleError extends CausalLinkError {}
export class StoreError extends ChronomemError {}
export class StoreUnavailableError extends StoreError {}
export class EmbedderError extends ChronomemError {}
export class EmbedderMismatchError extends EmbedderError {
  expected_model: string | null = null;
  expected_dim: number | null = null;
  got_model: string | null = null;
  got_dim: number | null = null;
}
export class EmbedderHTTPError extends EmbedderError {}
export class EmbedderTimeoutError extends EmbedderError {}
export class EmbedderResponseError extends EmbedderError {}
/** The service could not be reached, or failed with an error that is not one of the engine's. */
export class ServiceError extends ChronomemError {}
/** 401/403: no key, an unknown or revoked key, or too small a scope. */
export class AccessDeniedError extends ServiceError {}
export class LLMError extends ChronomemError {}
export class LLMHTTPError extends LLMError {
  /** The status the LLM endpoint answered the service with. */
  upstream_status = 0;
}
export class LLMTimeoutError extends LLMError {}
export class LLMResponseError extends LLMError {}
export class CitationError extends LLMError {}
export class ExtractionError extends LLMError {
  reasons: string[] = [];
}
export class ReflectionError extends LLMError {
  reasons: string[] = [];
}
/** The service's answer does not have the shape the call reads (another version of chronomem?). */
export class AnswerError extends ChronomemError {}

/** Every class of the tree by name. */
export const ERRORS = {
  ChronomemError, ConfigError, InvalidInputError, NotFoundError, ConflictError,
  DependentsExistError, CausalLinkError, CauseAfterEffectError, CausalCycleError, StoreError,
  StoreUnavailableError, EmbedderError, EmbedderMismatchError, EmbedderHTTPError,
  EmbedderTimeoutError, EmbedderResponseError, ServiceError, AccessDeniedError, LLMError,
  LLMHTTPError, LLMTimeoutError, LLMResponseError, CitationError, ExtractionError,
  ReflectionError, AnswerError,
} as const;

export type ErrorName = keyof typeof ERRORS;

/** The tree as `{name: parent}` (the root's parent is `null`): the test compares it with
 * Python's. */
export function errorTree(): { [name: string]: string | null } {
  const tree: { [name: string]: string | null } = {};
  for (const [name, cls] of Object.entries(ERRORS)) {
    const parent = Object.getPrototypeOf(cls) as { name: string };
    tree[name] = cls === ChronomemError ? null : parent.name;
  }
  return tree;
}

const MEMBERS = ["field", "record_id", "event_id", "expected_model", "expected_dim",
  "got_model", "got_dim"] as const;

function isProblem(value: unknown): value is Problem {
  if (value === null || typeof value !== "object") return false;
  const body = value as { [key: string]: unknown };
  const named = typeof body["error"] === "string" || typeof body["type"] === "string";
  return named && body["detail"] !== undefined;
}

/** The class name a document names: its `error`, else the tail of its `type` URN. */
function nameOf(problem: Problem): string {
  if (typeof problem.error === "string") return problem.error;
  const type = String(problem.type);
  return type.slice(type.lastIndexOf(":") + 1);
}

/** The error an answer with `status` and body `text` reports. */
export function fromAnswer(status: number, text: string): ChronomemError {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (!isProblem(body)) {
    const err = new ServiceError(`the service answered ${status}: ${text.slice(0, 200)}`);
    err.status = status;
    return err;
  }
  return fromProblem(status, body);
}

/** The error a problem document reports, as the Python client's `_error` maps it. */
export function fromProblem(status: number, problem: Problem): ChronomemError {
  const name = nameOf(problem);
  const detail = String(problem.detail);
  let err: ChronomemError;
  if (status === 401 || status === 403) {
    err = new AccessDeniedError(detail);
  } else if (name === "NotFound") {
    err = new NotFoundError(detail);
  } else if (Object.hasOwn(ERRORS, name) && name !== "AnswerError") {
    err = new ERRORS[name as ErrorName](detail);
  } else {
    err = new ServiceError(`${name}: ${detail}`);
  }
  err.status = status;
  err.problem = problem;
  const members = err as unknown as { [key: string]: unknown };
  for (const member of MEMBERS) {
    const value = problem[member];
    if (value !== undefined && value !== null) members[member] = value;
  }
  if (err instanceof DependentsExistError) err.dependants = asStrings(problem["dependants"]);
  if (err instanceof ReflectionError || err instanceof ExtractionError) {
    err.reasons = asStrings(problem["reasons"]);
  }
  if (err instanceof LLMHTTPError) err.upstream_status = Number(problem["upstream_status"] ?? 0);
  return err;
}

function asStrings(value: unknown): string[] {
  return Array.isArray(value) ? value.map(String) : [];
}
