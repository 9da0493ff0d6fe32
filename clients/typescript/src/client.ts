/**
 * A client of one space of `chronomem serve`, over `fetch`: the Python client's verbs
 * (`chronomem.client.Client`) as camelCase methods, each sending the route the table names
 * (`routes.ts`), answering with the service's JSON typed by `schema.ts`, failing with
 * chronomem's error classes (`errors.ts`).
 *
 * Fields keep the service's names (`as_of`, `occurred_at`, `include_history`): one word per idea
 * in every language chronomem speaks. Instants in answers are ISO 8601 strings in UTC with
 * microseconds (a `Date` would drop them); instants sent may be `Date`s or strings.
 *
 * The service validates every argument as the engine does and answers a bad one with a 422
 * `InvalidInputError` naming the field; the client checks only what it needs to build the
 * request (path segments, a filter, ids given as a list).
 */
import {
  AnswerError,
  ChronomemError,
  InvalidInputError,
  ServiceError,
  fromAnswer,
} from "./errors.js";
import { ROUTES, type RouteName } from "./routes.js";
import { serverSentEvents } from "./stream.js";
import type * as S from "./schema.js";
import type {
  Ancestor,
  AuditEntry,
  BulkResult,
  Calibration,
  ClockOut,
  ContextBlock,
  CoreBlock,
  Dependant,
  Event,
  ExtractionReport,
  ForgetResult,
  Hit,
  ImportReport,
  Instant,
  Kind,
  Link,
  Proposal,
  Record as MemoryRecord,
  ReflectionResult,
  ScrubResult,
  Status,
  WriteResult,
  Access,
  EventKind,
  Duration,
  Change,
  Webhook,
  WebhookFailure,
} from "./schema.js";

export interface ClientOptions {
  /** An API key (`cmk_…`), sent as `Authorization: Bearer …`; none for a local server that
   * has no keys yet. */
  key?: string;
  /** The space every call addresses (default `"default"`). */
  space?: string;
  /** Milliseconds per request (default 60,000; 0: none). */
  timeout?: number;
  /** Aborts every request made while it is aborted (with `timeout`, whichever comes first). */
  signal?: AbortSignal;
  /** Sent with every request (a proxy's token). */
  headers?: { [name: string]: string };
  /** Sent as `X-Request-Id` (Python: inside `chronomem.telemetry.request_id(...)`); the service
   * logs it and records it in the audit entries the request made. */
  requestId?: string;
  /** The `fetch` to use (default: the global one). */
  fetch?: typeof fetch;
}

/** A JSON filter (docs/filters.md): field comparisons, metadata paths, `and` / `or` / `not`. */
export type Filter = { [key: string]: unknown };

/** `records()`'s query (`GET /records`); `agent` and `kinds` may list several. */
export interface RecordsQuery {
  agent?: string;
  agents?: string[];
  kinds?: Kind[];
  domain?: string;
  include_history?: boolean;
  since?: Instant;
  until?: Instant;
  as_of?: Instant;
  limit?: number;
  offset?: number;
  status?: Status;
  filter?: Filter;
  session?: string;
  refresh_ttl?: boolean;
}

/** `events()`'s query (`GET /events`). */
export interface EventsQuery {
  kinds?: EventKind[];
  scope?: string;
  since?: Instant;
  until?: Instant;
  as_of?: Instant;
  limit?: number;
  offset?: number;
}

/** `ancestors()` / `descendants()`: how far, and as of when. */
export interface ReachQuery {
  max_depth?: number;
  as_of?: Instant;
}

/** `stats()`: the space's counts, as the engine reports them (without the store's location). */
export interface Stats {
  schema_version: number;
  space: string;
  records: number;
  agents: { [agent: string]: { [kind: string]: number } };
  embedding_model: string | null;
  embedding_dim: number | null;
  bytes_on_disk: number;
  embedder: string | null;
  preset: string;
  thresholds: { [name: string]: number | boolean };
  [more: string]: unknown;
}

/** `health()`. */
export interface Health {
  status: string;
  schema_version: number;
  [more: string]: unknown;
}

/** A chat message (OpenAI style: `role`, `content`, `name?`; LangChain's fields as a dict). */
export type Message = { [field: string]: unknown };

type Without<T, K extends keyof T> = Omit<T, K>;

export type RememberOptions = Without<S.RememberIn, "text">;
export type BatchOptions = Without<S.BatchIn, "items">;
export type MessagesOptions = Without<S.MessagesIn, "messages">;
export type SupersedeOptions = Without<S.SupersedeIn, "text">;
export type RecallOptions = Without<S.RecallIn, "query">;
export type PeekOptions = Without<S.PeekIn, "query">;
export type RecallManyOptions = Without<S.RecallManyIn, "queries">;
export type ContextOptions = Without<S.ContextIn, "query">;
export type CloseWhereOptions = Without<S.CloseWhereIn, "filter" | "reason">;
export type VerifyWhereOptions = Without<S.VerifyWhereIn, "filter">;
export type ForgetWhereOptions = Without<S.ForgetWhereIn, "filter" | "reason">;
export type EventOptions = Without<S.EventIn, "text">;
export type LinkOptions = Without<S.LinkIn, "cause" | "effect">;
export type ExtractOptions = Without<S.ExtractIn, "agent">;
export type WebhookOptions = Without<S.WebhookIn, "url">;

/** `changes()` / `serviceChanges()`: how many, and how long to wait for the first. */
export interface ChangesOptions {
  /** The most changes answered (default 100, at most 1000). */
  limit?: number;
  /** Seconds (at most 60) the service may hold the answer until a change commits: a long
   * poll. The request's timeout is extended by as much. */
  wait?: number;
}

/** `watch()`: what ends it, and what a dropped connection does. */
export interface WatchOptions {
  /** Ends the iteration when aborted (with the client's own `signal`); nothing else does. */
  signal?: AbortSignal;
  /** Milliseconds to wait before reconnecting after the connection dropped or the service
   * ended the stream (default 1,000), resuming after the last change seen (`Last-Event-ID`);
   * `false`: do not reconnect, throw a `ServiceError` instead. */
  reconnect?: number | false;
}

/** What `send` needs besides the route. */
interface Request {
  path?: { [name: string]: string };
  query?: object;
  body?: unknown;
  content?: string | Uint8Array | Blob;
  text?: boolean;
  /** `"empty"`: the answer has no body (a 204). */
  shape?: "array" | "object" | "number" | "boolean" | "object|null" | "empty";
  /** Seconds the service may hold the answer on purpose (a long poll), added to the timeout. */
  waits?: number;
}

/** How a request is sent: the timeout extended by a long poll's wait, or, for a stream, applied
 * only until the answer's headers arrive; and a signal of the call's own. */
interface Sending {
  waits?: number;
  stream?: boolean;
  signal?: AbortSignal;
}

/** A JSON value for an argument: `Date`s as ISO 8601, the rest as it is. */
function wire(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(wire);
  if (value !== null && typeof value === "object") {
    const out: { [key: string]: unknown } = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = wire(v);
    return out;
  }
  return value;
}

/** `value`, when it is a non-empty string; else the `InvalidInputError` the service would send. */
function text(value: unknown, name: string): string {
  if (typeof value !== "string" || value.trim() === "") {
    const err = new InvalidInputError(`${name} must be a non-empty string; got ${JSON.stringify(value)}`);
    err.field = name;
    throw err;
  }
  return value;
}

/** `value` as one path segment. */
function segment(value: unknown, name: string): string {
  return encodeURIComponent(text(value, name));
}

function list(value: unknown, name: string): void {
  if (!Array.isArray(value)) {
    const err = new InvalidInputError(`${name} must be a list`);
    err.field = name;
    throw err;
  }
}

function queryString(query: object): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue;
    for (const item of Array.isArray(value) ? value : [value]) {
      if (item instanceof Date) params.append(name, item.toISOString());
      else if (typeof item === "object") params.append(name, JSON.stringify(item));
      else params.append(name, String(item));
    }
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done);
  });
}

function shaped(value: unknown, shape: Request["shape"]): boolean {
  switch (shape) {
    case "array":
      return Array.isArray(value);
    case "object":
      return value !== null && typeof value === "object" && !Array.isArray(value);
    case "object|null":
      return value === null || shaped(value, "object");
    case "number":
      return typeof value === "number";
    case "boolean":
      return typeof value === "boolean";
    default:
      return true;
  }
}

/** A client of one space of `chronomem serve`. */
export class Client {
  readonly url: string;
  readonly space: string;
  private readonly options: ClientOptions;

  /**
   * @param url the service's root, e.g. `http://127.0.0.1:8420`.
   */
  constructor(url: string, options: ClientOptions = {}) {
    this.url = url.replace(/\/+$/, "");
    this.space = options.space ?? "default";
    text(this.space, "space");
    this.options = { ...options };
  }

  /** A client like this one with some options changed (another space, a request id, a
   * signal); it shares nothing mutable with this one. */
  with(options: ClientOptions): Client {
    return new Client(this.url, {
      ...this.options,
      ...options,
      headers: { ...this.options.headers, ...options.headers },
    });
  }

  /** The headers every request sends. */
  headers(): { [name: string]: string } {
    const out: { [name: string]: string } = { Accept: "application/json", ...this.options.headers };
    if (this.options.key) out["Authorization"] = `Bearer ${this.options.key}`;
    if (this.options.requestId) out["X-Request-Id"] = this.options.requestId;
    return out;
  }

  /** Send the table's route `name` and read its answer. */
  async send<T>(name: RouteName, request: Request = {}): Promise<T> {
    const response = await this.open(name, request, { waits: request.waits ?? 0 });
    const text = await response.text();
    if (request.text) return text as T;
    if (request.shape === "empty") return undefined as T;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new AnswerError(`the service answered ${name} with what is not JSON: ${text.slice(0, 80)}`);
    }
    if (!shaped(value, request.shape)) {
      throw new AnswerError(
        `the service answered ${name} with ${text.slice(0, 80)} where ${request.shape} was expected`,
      );
    }
    return value as T;
  }

  /** Send the table's route `name`: its answer, once it is a success (its body unread), or the
   * error class of the problem it is. */
  private async open(
    name: RouteName, request: Request, sending: Sending, extra: { [name: string]: string } = {},
  ): Promise<Response> {
    const route = ROUTES[name];
    const values: { [name: string]: string } = { space: encodeURIComponent(this.space), ...request.path };
    const path = route.path.replace(/\{(\w+)\}/g, (_, key: string) => {
      const value = values[key];
      if (value === undefined) throw new Error(`route ${name} needs {${key}}`);
      return value;
    });
    const url = this.url + path + queryString(request.query ?? {});
    const headers = { ...this.headers(), ...extra };
    let body: BodyInit | undefined;
    if (request.content !== undefined) {
      const content = request.content;
      body = content instanceof Uint8Array ? new Blob([new Uint8Array(content)]) : content;
      headers["Content-Type"] = "application/x-ndjson";
    } else if (request.body !== undefined) {
      body = JSON.stringify(wire(request.body));
      headers["Content-Type"] = "application/json";
    }
    const response = await this.fetch(url, { method: route.method, headers, body }, sending);
    if (!response.ok) throw fromAnswer(response.status, await response.text());
    return response;
  }

  private async fetch(url: string, init: RequestInit, sending: Sending = {}): Promise<Response> {
    const base = this.options.timeout ?? 60_000;
    const timeout = base > 0 ? base + Math.max(0, sending.waits ?? 0) * 1000 : 0;
    // a stream's timeout is its headers': AbortSignal.timeout would also cut the body
    const headersDue = sending.stream && timeout > 0 ? new AbortController() : undefined;
    const timer = headersDue
      ? setTimeout(() => headersDue.abort(new DOMException("no headers", "TimeoutError")), timeout)
      : undefined;
    const signals = [
      ...(headersDue ? [headersDue.signal] : timeout > 0 ? [AbortSignal.timeout(timeout)] : []),
      ...(this.options.signal ? [this.options.signal] : []),
      ...(sending.signal ? [sending.signal] : []),
    ];
    const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
    const send = this.options.fetch ?? globalThis.fetch;
    try {
      return await send(url, signal ? { ...init, signal } : init);
    } catch (exc) {
      if (exc instanceof ChronomemError) throw exc;
      const reason = exc instanceof Error ? exc : new Error(String(exc));
      const why =
        reason.name === "TimeoutError"
          ? `no answer within ${timeout} ms`
          : reason.name === "AbortError"
            ? "the request was aborted"
            : `${reason.message}${reason.cause instanceof Error ? ` (${reason.cause.message})` : ""}`;
      throw new ServiceError(`cannot reach the chronomem service at ${this.url}: ${why}`, {
        cause: reason,
      });
    } finally {
      clearTimeout(timer);
    }
  }

  // -- records --------------------------------------------------------------------------------
  /** Store a record (`Memory.remember`). Without an embedder on the service, send `embedding`
   * to give it a vector; otherwise it is matched lexically. */
  async remember(text: string, options: RememberOptions = {}): Promise<WriteResult> {
    return this.send("remember", { body: { ...options, text }, shape: "object" });
  }

  /** Store many records in one transaction (`Memory.remember_many`); a string is `{text}`. */
  async rememberMany(items: Array<string | S.RecordFields>, options: BatchOptions = {}): Promise<WriteResult[]> {
    list(items, "items");
    const batch = items.map((item) => (typeof item === "string" ? { text: item } : item));
    return this.send("rememberMany", { body: { ...options, items: batch }, shape: "array" });
  }

  /** A conversation's turns as chat records, one result per message (`remember_messages`). */
  async rememberMessages(messages: Message[], options: MessagesOptions = {}): Promise<WriteResult[]> {
    list(messages, "messages");
    return this.send("rememberMessages", { body: { ...options, messages }, shape: "array" });
  }

  /** Browse without a query, newest first (`Memory.records`). */
  async records(query: RecordsQuery = {}): Promise<MemoryRecord[]> {
    const { agent, agents, kinds, filter, ...rest } = query;
    const params = {
      ...rest,
      agent: agents ?? agent,
      kind: kinds,
      filter: filter === undefined ? undefined : JSON.stringify(filter),
    };
    return this.send("records", { query: params, shape: "array" });
  }

  /** One record by id, whatever its status (`Memory.get`). */
  async get(recordId: string): Promise<MemoryRecord> {
    return this.send("get", { path: { record_id: segment(recordId, "record_id") }, shape: "object" });
  }

  /** The records with these ids in that order; unknown ids are left out (`get_many`). */
  async getMany(recordIds: string[]): Promise<MemoryRecord[]> {
    list(recordIds, "record_ids");
    return this.send("getMany", { body: { record_ids: recordIds }, shape: "array" });
  }

  /** What depends on the record, as `forget` weighs it. */
  async dependants(recordId: string): Promise<Dependant[]> {
    return this.send("dependants", { path: { record_id: segment(recordId, "record_id") }, shape: "array" });
  }

  /** The record's supersession chain. */
  async history(recordId: string): Promise<MemoryRecord[]> {
    return this.send("history", { path: { record_id: segment(recordId, "record_id") }, shape: "array" });
  }

  /** The space's audit log, or one record's (`Memory.audit(record_id)`). */
  async audit(recordId?: string): Promise<AuditEntry[]> {
    if (recordId === undefined) return this.send("audit", { shape: "array" });
    return this.send("recordAudit", { path: { record_id: segment(recordId, "record_id") }, shape: "array" });
  }

  /** Replace a record with a new one (`Memory.supersede`, one old record per call; several:
   * `remember(text, {supersedes: [...]})`). */
  async supersede(oldId: string, text: string, options: SupersedeOptions = {}): Promise<WriteResult> {
    const path = { record_id: segment(oldId, "old_ids") };
    return this.send("supersede", { path, body: { ...options, text }, shape: "object" });
  }

  /** End a record without a successor (`Memory.close_record`). */
  async closeRecord(recordId: string, reason: string, options: { valid_until?: Instant } = {}): Promise<MemoryRecord> {
    const path = { record_id: segment(recordId, "record_id") };
    return this.send("closeRecord", { path, body: { ...options, reason }, shape: "object" });
  }

  /** Stamp `last_verified_at` (`Memory.verify`). */
  async verify(recordId: string, options: { reason?: string | null } = {}): Promise<MemoryRecord> {
    const path = { record_id: segment(recordId, "record_id") };
    return this.send("verify", { path, body: options, shape: "object" });
  }

  /** Close every record whose time to live ran out; their ids (`Memory.expire`). */
  async expire(): Promise<string[]> {
    return this.send("expire", { body: {}, shape: "array" });
  }

  /** Rate a record: `"helpful"`, `"harmful"` or a number (`Memory.feedback`). */
  async feedback(recordId: string, signal: "helpful" | "harmful" | number, reason?: string): Promise<MemoryRecord> {
    const path = { record_id: segment(recordId, "record_id") };
    return this.send("feedback", { path, body: { signal, reason }, shape: "object" });
  }

  /** Delete a record, or purge it (`purge: true`, admin) — refused while anything depends on
   * it (`DependentsExistError`). */
  async forget(recordId: string, reason: string, options: { purge?: boolean } = {}): Promise<ForgetResult> {
    const path = { record_id: segment(recordId, "record_id") };
    return this.send("forget", { path, body: { ...options, reason }, shape: "object" });
  }

  // -- the change feed and its webhooks -------------------------------------------------------
  /** The space's changes after the seq `after`, oldest first (`Memory.changes`); with `wait`,
   * a long poll: when there is none yet, the answer comes as soon as one commits, or empty
   * after `wait` seconds. */
  async changes(after = 0, options: ChangesOptions = {}): Promise<Change[]> {
    return this.send("changes", { query: { ...options, after }, shape: "array", waits: options.wait });
  }

  /** The service's own feed, as `changes` reads a space's: admin keys' creation and revocation
   * (keys bound to no space; admin). */
  async serviceChanges(after = 0, options: ChangesOptions = {}): Promise<Change[]> {
    return this.send("serviceChanges", { query: { ...options, after }, shape: "array", waits: options.wait });
  }

  /**
   * The space's changes after `after`, then each as it commits (Server-Sent Events):
   * `for await (const change of mem.watch(seq, { signal })) …`. It has no timeout: aborting
   * `signal` (or the client's) ends the iteration without an error, and so does leaving the
   * loop (the connection is closed). When the connection drops it reconnects after
   * `reconnect` ms with `Last-Event-ID` = the last seq seen, so no change is lost or repeated;
   * a refusal (401, 403, 404, 422) throws as every call does, on connecting or reconnecting.
   */
  async *watch(after = 0, options: WatchOptions = {}): AsyncGenerator<Change, void, undefined> {
    const delay = options.reconnect ?? 1000;
    const stop = new AbortController(); // closes the connection when the consumer stops
    const signal = options.signal ? AbortSignal.any([stop.signal, options.signal]) : stop.signal;
    const ended = (): boolean => Boolean(options.signal?.aborted || this.options.signal?.aborted);
    const sending = { stream: true, signal };
    const query = { after };
    let last: string | undefined;
    let connected = false;
    try {
      for (;;) {
        let response: Response;
        try {
          const resume: { [name: string]: string } = last === undefined ? {} : { "Last-Event-ID": last };
          response = await this.open("watch", { query }, sending, { ...resume, Accept: "text/event-stream" });
        } catch (exc) {
          if (ended()) return;
          // the service is unreachable on reconnecting: try again, as an EventSource does
          if (!connected || delay === false || !(exc instanceof ServiceError && exc.status === 0)) throw exc;
          await pause(delay, signal);
          continue;
        }
        connected = true;
        let why = "the service ended the stream";
        try {
          if (response.body === null) throw new AnswerError("the service answered watch without a body");
          for await (const event of serverSentEvents(response.body)) {
            if (event.event !== "change") continue;
            let change: Change;
            try {
              change = JSON.parse(event.data) as Change;
            } catch {
              throw new AnswerError(`the service sent a change that is not JSON: ${event.data.slice(0, 80)}`);
            }
            last = event.id ?? String(change.seq);
            yield change;
          }
        } catch (exc) {
          if (ended()) return;
          if (exc instanceof ChronomemError) throw exc;
          const reason = exc instanceof Error ? exc : new Error(String(exc));
          why = `the connection dropped: ${reason.message}`;
          if (delay === false) {
            throw new ServiceError(`watching the changes of ${this.url}: ${why}`, { cause: reason });
          }
        }
        if (ended()) return;
        if (delay === false) throw new ServiceError(`watching the changes of ${this.url}: ${why}`);
        await pause(delay, signal);
      }
    } finally {
      stop.abort();
    }
  }

  /** Subscribe `url` to the space's changes after `after` (default: from now on; admin); the
   * answer carries the signing secret (a new random one unless given), the only time it is
   * shown. */
  async addWebhook(url: string, options: WebhookOptions = {}): Promise<Webhook> {
    return this.send("addWebhook", { body: { ...options, url: text(url, "url") }, shape: "object" });
  }

  /** The space's subscriptions: cursor (`delivered`), failures in a row, last error; `secret`
   * is `null` (admin). */
  async webhooks(): Promise<Webhook[]> {
    return this.send("webhooks", { shape: "array" });
  }

  /** One subscription; `NotFoundError` if the space has none by that id (admin). */
  async webhook(webhookId: string): Promise<Webhook> {
    return this.send("webhook", { path: { webhook_id: segment(webhookId, "webhook_id") }, shape: "object" });
  }

  /** A subscription's failed delivery attempts (the newest 100), oldest first (admin). */
  async webhookFailures(webhookId: string): Promise<WebhookFailure[]> {
    const path = { webhook_id: segment(webhookId, "webhook_id") };
    return this.send("webhookFailures", { path, shape: "array" });
  }

  /** End a subscription, its failures with it (admin; `NotFoundError` if there is none). */
  async removeWebhook(webhookId: string): Promise<void> {
    const path = { webhook_id: segment(webhookId, "webhook_id") };
    return this.send("removeWebhook", { path, shape: "empty" });
  }

  // -- changes by filter ----------------------------------------------------------------------
  /** Close every record the filter selects, in one transaction (`Memory.close_where`). */
  async closeWhere(filter: Filter, reason: string, options: CloseWhereOptions = {}): Promise<BulkResult> {
    return this.send("closeWhere", { body: { ...options, filter, reason }, shape: "object" });
  }

  /** Verify every record the filter selects (`Memory.verify_where`). */
  async verifyWhere(filter: Filter, options: VerifyWhereOptions = {}): Promise<BulkResult> {
    return this.send("verifyWhere", { body: { ...options, filter }, shape: "object" });
  }

  /** Forget every record the filter selects (`Memory.forget_where`; a purge needs admin). */
  async forgetWhere(filter: Filter, reason: string, options: ForgetWhereOptions = {}): Promise<BulkResult> {
    return this.send("forgetWhere", { body: { ...options, filter, reason }, shape: "object" });
  }

  // -- reads ----------------------------------------------------------------------------------
  /** The best `k` records for `query`, touched unless `touch: false` (`Memory.recall`);
   * `explain: true` fills each hit's `breakdown`. */
  async recall(query: string, options: RecallOptions = {}): Promise<Hit[]> {
    return this.send("recall", { body: { ...options, query }, shape: "array" });
  }

  /** `recall` that never touches (`Memory.peek`). */
  async peek(query: string, options: PeekOptions = {}): Promise<Hit[]> {
    return this.send("peek", { body: { ...options, query }, shape: "array" });
  }

  /** Several queries against one snapshot, touched once at the end (`Memory.recall_many`). */
  async recallMany(queries: string[], options: RecallManyOptions = {}): Promise<Hit[][]> {
    list(queries, "queries");
    return this.send("recallMany", { body: { ...options, queries }, shape: "array" });
  }

  /** A context block for a prompt: the ranked evidence and the causal chain (`Memory.context`). */
  async context(query?: string | null, options: ContextOptions = {}): Promise<ContextBlock> {
    return this.send("context", { body: { ...options, query }, shape: "object" });
  }

  /** The space's agents. */
  async agents(): Promise<string[]> {
    return this.send("agents", { shape: "array" });
  }

  /** The importance the agent accumulated since its last reflection. */
  async accumulatedImportance(agent: string): Promise<number> {
    return this.send("accumulatedImportance", { path: { agent: segment(agent, "agent") }, shape: "number" });
  }

  /** The space's counts (`Memory.stats`, without the server's store location). */
  async stats(): Promise<Stats> {
    return this.send("stats", { shape: "object" });
  }

  // -- core memory blocks ---------------------------------------------------------------------
  /** The agent's core memory blocks (`Memory.core_blocks`). */
  async coreBlocks(agent: string, options: { as_of?: Instant } = {}): Promise<CoreBlock[]> {
    return this.send("coreBlocks", { path: { agent: segment(agent, "agent") }, query: options, shape: "array" });
  }

  /** Append to a core block: a new version that supersedes the old (`Memory.core_append`). */
  async coreAppend(agent: string, label: string, text: string, options: { limit?: number } = {}): Promise<CoreBlock> {
    const path = { agent: segment(agent, "agent"), label: segment(label, "label") };
    return this.send("coreAppend", { path, body: { ...options, text }, shape: "object" });
  }

  /** Replace `old` by `new` in a core block (`Memory.core_replace`). */
  async coreReplace(
    agent: string, label: string, old: string, replacement: string, options: { limit?: number } = {},
  ): Promise<CoreBlock> {
    const path = { agent: segment(agent, "agent"), label: segment(label, "label") };
    return this.send("coreReplace", { path, body: { ...options, old, new: replacement }, shape: "object" });
  }

  // -- causal graph ---------------------------------------------------------------------------
  /** A node of the causal graph (`Memory.add_event`). */
  async addEvent(text: string, options: EventOptions = {}): Promise<Event> {
    return this.send("addEvent", { body: { ...options, text }, shape: "object" });
  }

  /** Browse the events by `occurred_at` (`Memory.events`). */
  async events(query: EventsQuery = {}): Promise<Event[]> {
    const { kinds, ...rest } = query;
    return this.send("events", { query: { ...rest, kind: kinds }, shape: "array" });
  }

  /** One event by id. */
  async getEvent(eventId: string): Promise<Event> {
    return this.send("getEvent", { path: { event_id: segment(eventId, "event_id") }, shape: "object" });
  }

  /** A causal link cause → effect (`Memory.link`; `weight` 1 and `explicit` by default). */
  async link(cause: string, effect: string, options: LinkOptions = {}): Promise<Link> {
    return this.send("link", { body: { ...options, cause, effect }, shape: "object" });
  }

  /** Remove a link; whether there was one. */
  async unlink(cause: string, effect: string): Promise<boolean> {
    const path = { cause: segment(cause, "cause"), effect: segment(effect, "effect") };
    return this.send("unlink", { path, shape: "boolean" });
  }

  /** Every link of the space. */
  async links(): Promise<Link[]> {
    return this.send("links", { shape: "array" });
  }

  /** The event's causes within `max_depth` links (default 4), with path strengths. */
  async ancestors(eventId: string, query: ReachQuery = {}): Promise<Ancestor[]> {
    return this.send("ancestors", { path: { event_id: segment(eventId, "event_id") }, query, shape: "array" });
  }

  /** The event's effects within `max_depth` links. */
  async descendants(eventId: string, query: ReachQuery = {}): Promise<Ancestor[]> {
    return this.send("descendants", { path: { event_id: segment(eventId, "event_id") }, query, shape: "array" });
  }

  /** Propose `inferred` links from earlier, similar events (`Memory.auto_link`). */
  async autoLink(eventId: string, options: S.AutoLinkIn = {}): Promise<Link[]> {
    const path = { event_id: segment(eventId, "event_id") };
    return this.send("autoLink", { path, body: options, shape: "array" });
  }

  // -- reflection, extraction, the service's models -------------------------------------------
  /** Reflect with the service's LLM (`Memory.reflect`; a `ConfigError` without one). */
  async reflect(agent: string, options: Without<S.ReflectIn, "agent"> = {}): Promise<ReflectionResult> {
    return this.send("reflect", { body: { ...options, agent: text(agent, "agent") }, shape: "object" });
  }

  /** Reflect if the agent's importance trigger is due; `null` if not (`maybe_reflect`). */
  async maybeReflect(agent: string, options: Without<S.MaybeReflectIn, "agent"> = {}): Promise<ReflectionResult | null> {
    return this.send("maybeReflect", { body: { ...options, agent: text(agent, "agent") }, shape: "object|null" });
  }

  /** Memories the service's LLM proposes from the agent's new turns (`Memory.extract`). */
  async extract(agent = "default", options: ExtractOptions = {}): Promise<ExtractionReport> {
    return this.send("extract", { body: { ...options, agent }, shape: "object" });
  }

  /** Embed the records' passages (admin); how many records. */
  async embedPassages(): Promise<number> {
    return this.send("embedPassages", { shape: "number" });
  }

  /** Give a vector to the records without one (admin); how many gained one. */
  async embedRecords(): Promise<number> {
    return this.send("embedRecords", { shape: "number" });
  }

  /** Measure the service's model's thresholds and keep them in the store (admin). */
  async calibrate(): Promise<Calibration> {
    return this.send("calibrate", { shape: "object" });
  }

  /** Rewrite the whole store's files, so purged bytes are gone (admin; every space's). */
  async scrub(): Promise<ScrubResult> {
    return this.send("scrub", { shape: "object" });
  }

  // -- review and the access log --------------------------------------------------------------
  /** Find and queue proposals (nothing is applied; `Memory.review`). */
  async review(agent?: string, options: { as_of?: Instant } = {}): Promise<Proposal[]> {
    return this.send("review", { query: { ...options, agent }, shape: "array" });
  }

  /** The queue as kept: `open`, `approved`, `rejected` or `obsolete`. */
  async proposals(status?: S.ProposalStatus): Promise<Proposal[]> {
    return this.send("proposals", { query: { status }, shape: "array" });
  }

  /** Apply a proposal (409 `ConflictError` when its records changed). */
  async approve(proposalId: string): Promise<Proposal> {
    return this.send("approve", { path: { proposal_id: segment(proposalId, "proposal_id") }, shape: "object" });
  }

  /** Reject a proposal. */
  async reject(proposalId: string, reason: string): Promise<Proposal> {
    const path = { proposal_id: segment(proposalId, "proposal_id") };
    return this.send("reject", { path, body: { reason }, shape: "object" });
  }

  /** Turn the access log on or off (admin); the new setting. */
  async setAccessLog(on: boolean): Promise<boolean> {
    return this.send("setAccessLog", { body: { on }, shape: "boolean" });
  }

  /** The access log, newest first, of the space or of one record. */
  async accesses(recordId?: string, options: { limit?: number } = {}): Promise<Access[]> {
    return this.send("accesses", { query: { ...options, record_id: recordId }, shape: "array" });
  }

  // -- moving data in and out, the clock, the service -----------------------------------------
  /** The space as a JSONL archive (admin; `Memory.export` writes it to a file: here it is the
   * text, to write where you like). */
  async export(): Promise<string> {
    return this.send("export", { text: true });
  }

  /** Load a JSONL archive into the space (admin; Python's `import_`). */
  async import(archive: string | Uint8Array | Blob): Promise<ImportReport> {
    return this.send("import", { content: archive, shape: "object" });
  }

  /** The space's clock: its now and whether it is simulated. */
  async clockReading(): Promise<ClockOut> {
    return this.send("clockReading", { shape: "object" });
  }

  /** Set the space's simulated now (`null`: the wall clock again; admin). */
  async setClock(now: Instant | null): Promise<ClockOut> {
    return this.send("setClock", { body: { now }, shape: "object" });
  }

  /** Move the space's simulated clock forward (seconds or ISO 8601; admin). */
  async advanceClock(by: Duration): Promise<ClockOut> {
    return this.send("advanceClock", { body: { by }, shape: "object" });
  }

  /** The service's health (no key needed). */
  async health(): Promise<Health> {
    return this.send("health", { shape: "object" });
  }
}
