/** Problem documents into error classes, as the Python client's `_error` maps them. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  AccessDeniedError, ChronomemError, DependentsExistError, EmbedderMismatchError, ERRORS,
  InvalidInputError, LLMHTTPError, NotFoundError, ReflectionError, ServiceError, fromAnswer,
  type Problem,
} from "../src/index.js";

const problem = (error: string, status: number, members: object = {}): Problem => ({
  type: `urn:chronomem:problem:${error}`, title: error, status, detail: `a ${error}`, error,
  field: null, ...members,
});
const answer = (status: number, body: object | string) =>
  fromAnswer(status, typeof body === "string" ? body : JSON.stringify(body));

describe("errors from answers", () => {
  it("every class of the tree comes back as itself, with the status and the document", () => {
    for (const [name, cls] of Object.entries(ERRORS)) {
      if (name === "AnswerError") continue; // the client's own: never sent by the service
      if (name === "AccessDeniedError" || name === "ServiceError") continue;
      const err = answer(418, problem(name, 418));
      assert.ok(err instanceof cls, name);
      assert.equal(err.constructor, cls, name);
      assert.deepEqual([err.name, err.message, err.status, err.problem?.error], [name, `a ${name}`, 418, name]);
    }
  });

  it("401 and 403 are AccessDeniedError whatever they name; NotFound is NotFoundError", () => {
    for (const status of [401, 403]) {
      const err = answer(status, problem(status === 401 ? "Unauthorized" : "Forbidden", status));
      assert.ok(err instanceof AccessDeniedError && err instanceof ServiceError);
      assert.equal(err.status, status);
    }
    assert.ok(answer(404, problem("NotFound", 404)) instanceof NotFoundError);
  });

  it("names outside the tree and answers that are no problem are ServiceError", () => {
    const internal = answer(500, problem("InternalError", 500));
    assert.equal(internal.constructor, ServiceError);
    assert.equal(internal.message, "InternalError: a InternalError");
    const html = answer(502, "<html>bad gateway</html>");
    assert.equal(html.constructor, ServiceError);
    assert.deepEqual([html.status, html.message], [502, "the service answered 502: <html>bad gateway</html>"]);
    assert.equal(answer(502, { detail: 1 }).constructor, ServiceError);
  });

  it("the document's type names the class when error is missing", () => {
    const { error: _, ...typed } = problem("InvalidInputError", 422);
    assert.ok(answer(422, typed) instanceof InvalidInputError);
  });

  it("structured context travels under Python's names", () => {
    const invalid = answer(422, { ...problem("InvalidInputError", 422), field: "k" });
    assert.equal(invalid.field, "k");
    const dependants = answer(409, problem("DependentsExistError", 409, { record_id: "r1", dependants: ["evidence:r2"] }));
    assert.ok(dependants instanceof DependentsExistError);
    assert.deepEqual([dependants.record_id, dependants.dependants], ["r1", ["evidence:r2"]]);
    const mismatch = answer(409, problem("EmbedderMismatchError", 409, { expected_model: "a", expected_dim: 384, got_model: "b", got_dim: 8 }));
    assert.ok(mismatch instanceof EmbedderMismatchError);
    assert.deepEqual([mismatch.expected_model, mismatch.expected_dim, mismatch.got_model, mismatch.got_dim], ["a", 384, "b", 8]);
    const reflection = answer(502, problem("ReflectionError", 502, { reasons: ["no citation"] }));
    assert.ok(reflection instanceof ReflectionError);
    assert.deepEqual(reflection.reasons, ["no citation"]);
    const upstream = answer(502, problem("LLMHTTPError", 502, { upstream_status: 429 }));
    assert.ok(upstream instanceof LLMHTTPError);
    assert.deepEqual([upstream.status, upstream.upstream_status], [502, 429]);
    assert.equal(answer(404, problem("NotFoundError", 404, { event_id: "e1" })).event_id, "e1");
    assert.ok(upstream instanceof ChronomemError && upstream instanceof Error);
  });
});
