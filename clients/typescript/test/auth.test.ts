/**
 * Keys against a real `chronomem serve` whose store has keys (so it is closed): no key or a bad
 * one is a 401, too small a scope a 403 — both `AccessDeniedError`, a `ServiceError` as in
 * Python — and a key of another space sees a 404 for everything of this one.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { AccessDeniedError, ChronomemError, Client, NotFoundError, ServiceError } from "../src/index.js";
import { failure, required } from "./env.js";

const URL_ = required("CHRONOMEM_KEYED_URL");
const as = (key?: string): Client => new Client(URL_, { space: "town", ...(key ? { key } : {}) });

describe("keys", () => {
  it("no key: 401 AccessDeniedError; health needs none", async () => {
    const refused = await failure(as().peek("anything"), AccessDeniedError);
    assert.ok(refused instanceof ServiceError && refused instanceof ChronomemError);
    assert.equal(refused.status, 401);
    assert.equal(refused.problem?.error, "Unauthorized");
    assert.equal((await as().health()).status, "ok");
  });

  it("an unknown or malformed key: 401", async () => {
    const unknown = `cmk_0123456789abcdef_${"x".repeat(43)}`;
    for (const key of [unknown, "not-a-key"]) {
      const refused = await failure(as(key).agents(), AccessDeniedError);
      assert.equal(refused.status, 401);
      assert.match(refused.message, /unknown, malformed or revoked/);
    }
  });

  it("the admin key writes; a read key reads it and may not write (403)", async () => {
    const admin = as(required("CHRONOMEM_ADMIN_KEY"));
    const written = await admin.remember("the well is dry", { agent: "ada", kind: "fact" });
    assert.equal(written.stored, true);
    const reader = as(required("CHRONOMEM_READ_KEY"));
    const hits = await reader.peek("well", { agent: "ada" });
    assert.deepEqual(hits.map((h) => h.record.id), [written.id]);
    const refused = await failure(reader.remember("no"), AccessDeniedError);
    assert.equal(refused.status, 403);
    assert.equal(refused.problem?.error, "Forbidden");
    assert.match(refused.message, /scope is read/);
    const touching = await failure(reader.recall("well"), AccessDeniedError); // a touch writes
    assert.equal(touching.status, 403);
    assert.equal((await reader.recall("well", { touch: false })).length, 1);
  });

  it("a key of another space: 404 for everything of this one", async () => {
    const stranger = as(required("CHRONOMEM_OTHER_KEY"));
    const hidden = await failure(stranger.agents(), NotFoundError);
    assert.equal(hidden.status, 404);
    assert.equal(hidden.problem?.error, "NotFound");
    assert.deepEqual(await stranger.with({ space: "elsewhere" }).agents(), []);
  });

  it("the feed refuses as every call: before a stream starts, and for webhooks and the service's feed", async () => {
    for (const [key, status] of [[undefined, 401], [required("CHRONOMEM_OTHER_KEY"), 404]] as const) {
      const changes = as(key).watch();
      const refused = await failure(changes.next(), status === 401 ? AccessDeniedError : NotFoundError);
      assert.equal(refused.status, status);
      assert.equal((await changes.next()).done, true); // a refused watch is over
    }
    const reader = as(required("CHRONOMEM_READ_KEY"));
    assert.ok(Array.isArray(await reader.changes(0, { limit: 1 }))); // reading the feed needs read
    // one at a time: a call made before the previous one is awaited would reject unhandled
    for (const call of [() => reader.addWebhook("http://127.0.0.1:9/"), () => reader.webhooks(), () => reader.serviceChanges()]) {
      assert.equal((await failure(call(), AccessDeniedError)).status, 403);
    }
  });
});
