/**
 * Every request the client sends, once: the route's HTTP method and path template, and the
 * client method that sends it. `Client` builds each request from this table (a method cannot
 * call a path the table does not list), and the test run checks the table against the
 * service's `/openapi.json` both ways (test/drift.test.ts, with {@link coverage}).
 *
 * Templates are the service's own: `{space}` is the client's space, the other `{name}`s are the
 * method's arguments, percent-encoded. `ancestors` and `descendants` are one route of the
 * service (`/events/{event_id}/{direction}`, `direction` one of the two).
 */

export type HttpMethod = "GET" | "POST" | "PUT" | "DELETE";

export interface Route {
  /** The `Client` method that sends it. */
  verb: string;
  method: HttpMethod;
  path: string;
}

const SPACE = "/v1/spaces/{space}";

function route(method: HttpMethod, path: string, verb?: string): Omit<Route, "verb"> & { verb?: string } {
  const full = path.startsWith("/v1/") ? path : SPACE + path;
  return verb === undefined ? { method, path: full } : { method, path: full, verb };
}

const TABLE = {
  // records
  remember: route("POST", "/records"),
  rememberMany: route("POST", "/records/batch"),
  rememberMessages: route("POST", "/messages"),
  records: route("GET", "/records"),
  get: route("GET", "/records/{record_id}"),
  getMany: route("POST", "/records/get-many"),
  dependants: route("GET", "/records/{record_id}/dependants"),
  history: route("GET", "/records/{record_id}/history"),
  audit: route("GET", "/audit"),
  recordAudit: route("GET", "/records/{record_id}/audit", "audit"),
  supersede: route("POST", "/records/{record_id}/supersede"),
  closeRecord: route("POST", "/records/{record_id}/close"),
  verify: route("POST", "/records/{record_id}/verify"),
  feedback: route("POST", "/records/{record_id}/feedback"),
  forget: route("POST", "/records/{record_id}/forget"),
  closeWhere: route("POST", "/records/close-where"),
  verifyWhere: route("POST", "/records/verify-where"),
  forgetWhere: route("POST", "/records/forget-where"),
  expire: route("POST", "/expire"),
  // the change feed and its webhooks
  changes: route("GET", "/changes"),
  watch: route("GET", "/changes/stream"),
  serviceChanges: route("GET", "/v1/changes"),
  addWebhook: route("POST", "/webhooks"),
  webhooks: route("GET", "/webhooks"),
  webhook: route("GET", "/webhooks/{webhook_id}"),
  webhookFailures: route("GET", "/webhooks/{webhook_id}/failures"),
  removeWebhook: route("DELETE", "/webhooks/{webhook_id}"),
  // reads
  recall: route("POST", "/recall"),
  peek: route("POST", "/peek"),
  recallMany: route("POST", "/recall-many"),
  context: route("POST", "/context"),
  agents: route("GET", "/agents"),
  accumulatedImportance: route("GET", "/agents/{agent}/importance"),
  stats: route("GET", "/stats"),
  // core memory blocks
  coreBlocks: route("GET", "/agents/{agent}/core"),
  coreAppend: route("POST", "/agents/{agent}/core/{label}/append"),
  coreReplace: route("POST", "/agents/{agent}/core/{label}/replace"),
  // causal graph
  addEvent: route("POST", "/events"),
  events: route("GET", "/events"),
  getEvent: route("GET", "/events/{event_id}"),
  ancestors: route("GET", "/events/{event_id}/ancestors"),
  descendants: route("GET", "/events/{event_id}/descendants"),
  autoLink: route("POST", "/events/{event_id}/auto-link"),
  links: route("GET", "/links"),
  link: route("POST", "/links"),
  unlink: route("DELETE", "/links/{cause}/{effect}"),
  // reflection, extraction, the service's models
  reflect: route("POST", "/reflections"),
  maybeReflect: route("POST", "/reflections/if-due"),
  extract: route("POST", "/extractions"),
  embedPassages: route("POST", "/embed-passages"),
  embedRecords: route("POST", "/embed-records"),
  calibrate: route("POST", "/calibrate"),
  scrub: route("POST", "/scrub"),
  // review and the access log
  review: route("GET", "/review"),
  proposals: route("GET", "/review/proposals"),
  approve: route("POST", "/review/{proposal_id}/approve"),
  reject: route("POST", "/review/{proposal_id}/reject"),
  setAccessLog: route("PUT", "/access-log"),
  accesses: route("GET", "/accesses"),
  // moving data in and out, the space's clock, the service
  export: route("GET", "/export"),
  import: route("POST", "/import"),
  clockReading: route("GET", "/clock"),
  setClock: route("PUT", "/clock"),
  advanceClock: route("POST", "/clock/advance"),
  health: route("GET", "/v1/health"),
} as const;

export type RouteName = keyof typeof TABLE;

/** The table: route name → the client method that sends it, HTTP method and path template. */
export const ROUTES: { readonly [name in RouteName]: Route } = Object.freeze(
  Object.fromEntries(
    Object.entries(TABLE).map(([name, r]) => [name, Object.freeze({ verb: name, ...r })]),
  ) as { [name in RouteName]: Route },
);

/**
 * Paths the service publishes that are not the API, left out of the drift check: the web UI,
 * the interactive docs and their files, the OpenAPI document itself, the Prometheus metrics and
 * the MCP endpoint (its own protocol, docs/agents.md). None of them is in the service's schema
 * today; they are listed so that one published by mistake is not taken for a verb.
 */
export const NOT_API: readonly RegExp[] = [
  /^\/ui(\/|$)/,
  /^\/docs(\/|$)/,
  /^\/static\//,
  /^\/openapi\.json$/,
  /^\/metrics$/,
  /^\/v1\/spaces\/\{space\}\/agents\/\{agent\}\/mcp(\/|$)/,
];

/** An operation of an OpenAPI document. */
export interface Operation {
  method: string;
  path: string;
}

/** What the drift check reports: the service's operations no route sends, the routes the
 * service does not publish, and the paths it publishes that were left out as not the API. */
export interface Coverage {
  uncovered: Operation[];
  unknown: Route[];
  excluded: Operation[];
}

interface SpecParameter {
  name: string;
  in: string;
  schema?: { enum?: unknown[] };
}

/** What the drift check reads of an OpenAPI document: its paths' operations. */
export interface OpenAPIPaths {
  paths: { [path: string]: { [method: string]: object } };
}

const METHODS = new Set(["get", "post", "put", "delete", "patch"]);

/** Whether the client's `route` is a request to the service's operation `method` `path`: the same
 * method and segments, a `{name}` of the route where the service has one, and a literal of the
 * route where the service has a parameter only when the parameter's `enum` holds it. */
function sends(r: Route, method: string, path: string, parameters: SpecParameter[]): boolean {
  if (r.method !== method.toUpperCase()) return false;
  const ours = r.path.split("/");
  const theirs = path.split("/");
  if (ours.length !== theirs.length) return false;
  return theirs.every((segment, i) => {
    const mine = ours[i] as string;
    const templated = /^\{.+\}$/;
    if (!templated.test(segment)) return mine === segment;
    if (templated.test(mine)) return true;
    const name = segment.slice(1, -1);
    const choices = parameters.find((p) => p.in === "path" && p.name === name)?.schema?.enum;
    return Array.isArray(choices) && choices.includes(mine);
  });
}

/** The drift check: `spec` (the service's `/openapi.json`) against `routes`. */
export function coverage(spec: OpenAPIPaths, routes: readonly Route[] = Object.values(ROUTES)): Coverage {
  const uncovered: Operation[] = [];
  const excluded: Operation[] = [];
  const matched = new Set<Route>();
  for (const [path, operations] of Object.entries(spec.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      if (!METHODS.has(method)) continue;
      const op = { method: method.toUpperCase(), path };
      if (NOT_API.some((pattern) => pattern.test(path))) {
        excluded.push(op);
        continue;
      }
      const parameters = (operation as { parameters?: SpecParameter[] }).parameters ?? [];
      const senders = routes.filter((r) => sends(r, method, path, parameters));
      if (senders.length === 0) uncovered.push(op);
      for (const r of senders) matched.add(r);
    }
  }
  const unknown = routes.filter((r) => !matched.has(r));
  return { uncovered, unknown, excluded };
}
