/**
 * The client against the service's own description of itself, so the two cannot drift:
 *
 * - every operation of the live service's `/openapi.json` is sent by a route of the table, and
 *   every route of the table is an operation of the service (`coverage`; the paths that are not
 *   the API are left out by `NOT_API`, an explicit list);
 * - every route's method exists on `Client`;
 * - `src/schema.ts` is what `scripts/schema.ts` renders from the live document;
 * - the error classes are Python's `chronomem.errors` tree, class for class, parent for parent.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { describe, it } from "node:test";

import { Client, ROUTES, coverage, errorTree, type Route } from "../src/index.js";
import { SCHEMA_FILE, renderSchema, type OpenAPI } from "../scripts/schema.js";
import { required } from "./env.js";

const spec = (await (await fetch(`${required("CHRONOMEM_URL")}/openapi.json`)).json()) as OpenAPI;

describe("drift against the service's OpenAPI", () => {
  it("every operation the service publishes is a route of the client, and back", () => {
    const found = coverage(spec);
    const operations = found.uncovered.map((op) => `${op.method} ${op.path}`);
    assert.deepEqual(operations, [], "operations of the service no client method sends");
    assert.deepEqual(found.unknown.map((r) => `${r.verb}: ${r.method} ${r.path}`), [],
      "routes of the client the service does not publish");
    assert.ok(Object.keys(spec.paths).length >= 50);
  });

  it("every route's verb is a method of Client", () => {
    for (const route of Object.values(ROUTES)) {
      const method = (Client.prototype as unknown as { [name: string]: unknown })[route.verb];
      assert.equal(typeof method, "function", `Client.${route.verb}`);
    }
  });

  it("src/schema.ts is the service's schema as rendered now", async () => {
    const committed = await readFile(SCHEMA_FILE, "utf8");
    assert.ok(committed === renderSchema(spec),
      "src/schema.ts is out of date: npm run build && npm run schema -- <service URL>");
  });

  it("the error classes are chronomem.errors' tree", () => {
    const python = JSON.parse(required("CHRONOMEM_ERROR_TREE")) as { [name: string]: string | null };
    assert.deepEqual(errorTree(), python);
  });
});

describe("the drift check itself", () => {
  const op = (parameters: object[] = []) => ({ parameters });
  const route = (verb: string, method: Route["method"], path: string): Route => ({ verb, method, path });

  it("reports a new operation of the service, and a route the service lost", () => {
    const fake = {
      paths: {
        "/v1/spaces/{space}/records": { post: op() },
        "/v1/spaces/{space}/changes": { get: op() },
        "/v1/spaces/{space}/webhooks/{webhook_id}": { delete: op() },
      },
    };
    const routes = [route("remember", "POST", "/v1/spaces/{space}/records"), route("gone", "GET", "/v1/spaces/{space}/gone")];
    const found = coverage(fake, routes);
    assert.deepEqual(found.uncovered.map((o) => `${o.method} ${o.path}`),
      ["GET /v1/spaces/{space}/changes", "DELETE /v1/spaces/{space}/webhooks/{webhook_id}"]);
    assert.deepEqual(found.unknown.map((r) => r.verb), ["gone"]);
  });

  it("a literal matches a parameter only among its enum; the excluded paths are listed", () => {
    const direction = { name: "direction", in: "path", schema: { enum: ["ancestors", "descendants"] } };
    const fake = {
      paths: {
        "/v1/spaces/{space}/events/{event_id}/{direction}": { get: op([direction]) },
        "/v1/spaces/{space}/records/{record_id}": { get: op() },
        "/ui/spaces/{space}": { get: op() },
        "/metrics": { get: op() },
      },
    };
    const routes = [
      route("ancestors", "GET", "/v1/spaces/{space}/events/{event_id}/ancestors"),
      route("sideways", "GET", "/v1/spaces/{space}/events/{event_id}/sideways"),
      route("getMany", "GET", "/v1/spaces/{space}/records/get-many"),
      route("get", "GET", "/v1/spaces/{space}/records/{record_id}"),
    ];
    const found = coverage(fake, routes);
    assert.deepEqual(found.uncovered, []);
    assert.deepEqual(found.unknown.map((r) => r.verb), ["sideways", "getMany"]);
    assert.deepEqual(found.excluded.map((o) => o.path), ["/ui/spaces/{space}", "/metrics"]);
  });
});
