/**
 * Every verb of the client against a real `chronomem serve --no-embedder` (open: a loopback
 * server without keys, the caller is the local admin). Values written are read back; errors
 * are checked for their class, status and field; the change feed's tests are in feed.ts. The
 * last test checks that the run sent every route of the table — so a method added to the table
 * is also exercised here.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  ChronomemError,
  Client,
  ConfigError,
  ConflictError,
  DependentsExistError,
  InvalidInputError,
  NotFoundError,
  ROUTES,
  ServiceError,
  type Hit,
  type WriteResult,
} from "../src/index.js";
import { failure, recording, required, same, type Sent } from "./env.js";
import { feedTests } from "./feed.js";

const URL_ = required("CHRONOMEM_URL");
const sent: Sent[] = [];
const mem = new Client(URL_, { space: "town", fetch: recording(sent), timeout: 20_000 });

/** A 4-d vector: the service has no embedder, so records and queries bring their own. */
const vec = (...v: number[]): number[] => v;
const ids: { [name: string]: string } = {};

function stored(result: { stored: boolean; id: string | null }): string {
  assert.equal(result.stored, true);
  assert.equal(typeof result.id, "string");
  return result.id as string;
}

describe("a space through the TypeScript client", () => {
  it("health, and the space's simulated clock", async () => {
    const health = await mem.health();
    assert.equal(health.status, "ok");
    assert.equal(typeof health.schema_version, "number");
    const set = await mem.setClock(new Date("2024-03-01T09:00:00Z"));
    assert.equal(set.simulated, true);
    same(set.now, "2024-03-01T09:00:00Z");
    same((await mem.advanceClock("PT1H")).now, "2024-03-01T10:00:00Z");
    same((await mem.advanceClock(60)).now, "2024-03-01T10:01:00Z");
    const reading = await mem.clockReading();
    assert.deepEqual([reading.simulated, Date.parse(reading.now)], [true, Date.parse("2024-03-01T10:01:00Z")]);
  });

  it("remember, get, get-many, records: every field written is read back", async () => {
    const id = stored(
      await mem.remember("Isabella is planning a party at 5pm", {
        agent: "isabella", kind: "plan", importance: 8, tags: ["party"],
        metadata: { place: "cafe", guests: 12 }, occurred_at: new Date("2024-03-01T08:00:00Z"),
        embedding: vec(1, 0, 0, 0), speaker: "Isabella", session: "monday",
      }),
    );
    ids.party = id;
    const record = await mem.get(id);
    assert.equal(record.text, "Isabella is planning a party at 5pm");
    assert.deepEqual([record.agent, record.kind, record.importance], ["isabella", "plan", 8]);
    assert.deepEqual(record.tags, ["party"]);
    assert.deepEqual(record.metadata, { place: "cafe", guests: 12 });
    same(record.occurred_at, "2024-03-01T08:00:00Z");
    same(record.recorded_at, "2024-03-01T10:01:00Z"); // the space's clock
    assert.deepEqual([record.has_embedding, record.speaker, record.session], [true, "Isabella", "monday"]);
    assert.equal(record.status, "open");

    const batch = await mem.rememberMany(
      ["Klaus reads about gentrification", { text: "Maria paints the harbour", agent: "maria", embedding: vec(0, 1, 0, 0) }],
      { agent: "klaus" },
    );
    assert.equal(batch.length, 2);
    ids.klaus = stored(batch[0] as WriteResult);
    ids.maria = stored(batch[1] as WriteResult);
    assert.equal((await mem.get(ids.maria as string)).agent, "maria");

    const many = await mem.getMany([ids.maria as string, "no-such-record", id]);
    assert.deepEqual(many.map((r) => r.id), [ids.maria, id]);

    const klaus = await mem.records({ agent: "klaus" });
    assert.deepEqual(klaus.map((r) => r.text), ["Klaus reads about gentrification"]);
    const filtered = await mem.records({ filter: { "metadata.place": "cafe" }, kinds: ["plan"] });
    assert.deepEqual(filtered.map((r) => r.id), [id]);
    const both = await mem.records({ agents: ["klaus", "maria"], limit: 1 });
    assert.equal(both.length, 1);
  });

  it("remember-messages: a conversation's turns as chat records", async () => {
    const results = await mem.rememberMessages(
      [{ role: "user", content: "I keep my bike in the hall" }, { role: "assistant", content: "Noted." }],
      { agent: "ada", session: "s1" },
    );
    assert.equal(results.length, 2);
    results.forEach(stored);
    const chats = await mem.records({ agent: "ada", kinds: ["chat"], session: "s1" });
    assert.deepEqual(new Set(chats.map((r) => r.text)), new Set(["I keep my bike in the hall", "Noted."]));
    assert.ok(chats.every((r) => r.kind === "chat" && r.session === "s1"));
  });

  it("recall touches, peek does not; explain fills the breakdown", async () => {
    await mem.advanceClock("PT10M");
    const hits = await mem.recall("who is planning a party?", { agent: "isabella", explain: true, k: 5 });
    assert.equal(hits[0]?.record.id, ids.party);
    assert.ok((hits[0] as Hit).score > 0);
    assert.equal(hits[0]?.breakdown?.relevance_mode, "lexical");
    assert.deepEqual(hits[0]?.holders, ["isabella"]);
    same((await mem.get(ids.party as string)).last_accessed_at, "2024-03-01T10:11:00Z");

    await mem.advanceClock("PT10M");
    const peeked = await mem.peek("party", { agents: ["isabella", "klaus"], query_embedding: vec(1, 0, 0, 0) });
    assert.equal(peeked[0]?.record.id, ids.party);
    assert.equal(peeked[0]?.breakdown, null);
    same((await mem.get(ids.party as string)).last_accessed_at, "2024-03-01T10:11:00Z");

    const untouched = await mem.recall("party", { agent: "isabella", touch: false });
    assert.equal(untouched.length, 1);
    same((await mem.get(ids.party as string)).last_accessed_at, "2024-03-01T10:11:00Z");

    const batches = await mem.recallMany(["party", "harbour"], { agents: ["isabella", "maria"], k: 1 });
    assert.deepEqual(batches.map((b) => b.map((h) => h.record.id)), [[ids.party], [ids.maria]]);
  });

  it("context: the ranked evidence as text and as data", async () => {
    const block = await mem.context("the party", { agent: "isabella", touch: false });
    assert.equal(block.question, "the party");
    assert.ok(block.text.includes("Isabella is planning a party"));
    assert.equal(block.evidence.length, 1);
    assert.ok(block.tokens > 0);
  });

  it("agents, accumulated importance, stats", async () => {
    assert.deepEqual(new Set(await mem.agents()), new Set(["isabella", "klaus", "maria", "ada"]));
    assert.ok((await mem.accumulatedImportance("isabella")) >= 8);
    const stats = await mem.stats();
    assert.equal(stats.space, "town");
    assert.equal(stats.records, 5);
    assert.equal(stats.embedding_dim, 4);
    assert.equal(stats["store"], undefined);
  });

  it("supersede, history, dependants, and forget refused while a record depends", async () => {
    const next = stored(await mem.supersede(ids.party as string, "the party moved to 6pm", { reason: "new plans" }));
    ids.moved = next;
    const old = await mem.get(ids.party as string);
    assert.deepEqual([old.status, old.superseded_by], ["superseded", next]);
    const successor = await mem.get(next);
    assert.deepEqual([successor.agent, successor.kind, successor.supersedes], ["isabella", "plan", [ids.party]]);
    assert.deepEqual(new Set((await mem.history(next)).map((r) => r.id)), new Set([ids.party, next]));
    const dependants = await mem.dependants(ids.party as string);
    assert.ok(dependants.some((d) => d.record_id === next), JSON.stringify(dependants));

    const refused = await failure(mem.forget(ids.party as string, "tidy"), DependentsExistError);
    assert.ok(refused instanceof ConflictError && refused instanceof ChronomemError);
    assert.equal(refused.status, 409);
    assert.equal(refused.record_id, ids.party);
    assert.ok(refused.dependants.length > 0);
  });

  it("feedback, verify, close, audit", async () => {
    const rated = await mem.feedback(ids.moved as string, "harmful", "outdated");
    assert.ok(rated.feedback_score < 0);
    const verified = await mem.verify(ids.moved as string, { reason: "asked her" });
    same(verified.last_verified_at, (await mem.clockReading()).now);
    const closed = await mem.closeRecord(ids.klaus as string, "he moved away");
    assert.deepEqual([closed.status, closed.closed_reason], ["closed", "he moved away"]);

    const trail = await mem.audit(ids.moved as string);
    const actions = trail.map((e) => e.action);
    for (const action of ["feedback", "verify"]) assert.ok(actions.includes(action), actions.join());
    assert.ok(trail.every((e) => e.record_id === ids.moved && e.actor === "local"));
    const all = await mem.audit();
    assert.ok(all.length > trail.length);
    assert.ok(all.some((e) => e.record_id === ids.klaus && e.reason === "he moved away"));
  });

  it("forget and purge; a purged record is gone", async () => {
    const note = stored(await mem.remember("Klaus shares his diary", { agent: "klaus" }));
    const purged = await mem.forget(note, "personal data", { purge: true });
    assert.deepEqual([purged.record_id, purged.purged], [note, true]);
    const gone = await failure(mem.get(note), NotFoundError);
    assert.equal(gone.status, 404);
    assert.equal(gone.problem?.error, "NotFoundError");
  });

  it("close-where, verify-where, forget-where, expire", async () => {
    const filter = { agent: "ada" };
    const dry = await mem.closeWhere(filter, "trial", { dry_run: true });
    assert.deepEqual([dry.action, dry.dry_run, dry.record_ids.length], ["close", true, 2]);
    const verified = await mem.verifyWhere(filter, { reason: "still true" });
    assert.deepEqual([verified.dry_run, verified.record_ids.length], [false, 2]);
    const doomed = await mem.forgetWhere(filter, "tidy", { dry_run: true });
    assert.equal(doomed.record_ids.length, 2);
    assert.equal((await mem.records({ agent: "ada" })).length, 2); // dry runs changed nothing

    const brief = stored(await mem.remember("the market is open today", { agent: "maria", ttl: 60 }));
    await mem.advanceClock("PT2M");
    assert.deepEqual(await mem.expire(), [brief]);
    assert.equal((await mem.get(brief)).closed_reason, "expired");
  });

  it("core memory blocks: append, replace, read", async () => {
    const first = await mem.coreAppend("isabella", "persona", "Isabella runs the cafe.");
    assert.deepEqual([first.label, first.text], ["persona", "Isabella runs the cafe."]);
    const replaced = await mem.coreReplace("isabella", "persona", "the cafe", "Hobbs Cafe");
    assert.equal(replaced.text, "Isabella runs Hobbs Cafe.");
    const blocks = await mem.coreBlocks("isabella");
    assert.deepEqual(blocks.map((b) => [b.label, b.text]), [["persona", "Isabella runs Hobbs Cafe."]]);
    assert.equal(blocks[0]?.record_id, replaced.record_id);
  });

  it("the causal graph: events, links, ancestry, auto-link, unlink", async () => {
    const drought = await mem.addEvent("the drought", {
      occurred_at: "2024-02-01T00:00:00Z", embedding: vec(0, 0, 1, 0), metadata: { region: "south" },
    });
    const riot = await mem.addEvent("the granary riot", { kind: "crisis", embedding: vec(0, 0, 0.9, 0.1) });
    ids.drought = drought.id;
    ids.riot = riot.id;
    assert.deepEqual((await mem.getEvent(drought.id)).metadata, { region: "south" });
    assert.deepEqual((await mem.events({ kinds: ["crisis"] })).map((e) => e.id), [riot.id]);
    assert.equal((await mem.events({ limit: 10 })).length, 2);

    const link = await mem.link(drought.id, riot.id, { weight: 0.8 });
    assert.deepEqual([link.cause, link.effect, link.weight, link.provenance], [drought.id, riot.id, 0.8, "explicit"]);
    assert.deepEqual((await mem.links()).map((l) => [l.cause, l.effect]), [[drought.id, riot.id]]);
    const causes = await mem.ancestors(riot.id, { max_depth: 3 });
    assert.deepEqual(causes.map((a) => [a.event.id, a.depth, a.strength]), [[drought.id, 1, 0.8]]);
    const effects = await mem.descendants(drought.id);
    assert.deepEqual(effects.map((a) => a.event.id), [riot.id]);
    const proposed = await mem.autoLink(riot.id, { window: "P60D", threshold: 0.5 });
    assert.ok(Array.isArray(proposed));
    assert.ok(proposed.every((l) => l.effect === riot.id && l.provenance === "inferred"));

    const crisis = await mem.context(null, { crisis: riot.id, touch: false });
    assert.equal(crisis.crisis?.id, riot.id);
    assert.ok(crisis.chain.length >= 1, JSON.stringify(crisis.chain));

    assert.equal(await mem.unlink(drought.id, riot.id), true);
    assert.equal(await mem.unlink(drought.id, riot.id), false);
    assert.deepEqual(await mem.ancestors(riot.id), []);
  });

  it("reflection and extraction need the service's LLM: ConfigError (400)", async () => {
    const reflect = await failure(mem.reflect("isabella"), ConfigError);
    assert.equal(reflect.status, 400);
    assert.match(reflect.message, /LLM/);
    const extract = await failure(mem.extract("ada", { session: "s1" }), ConfigError);
    assert.equal(extract.status, 400);
    assert.equal(await mem.maybeReflect("klaus"), null); // not due: no LLM asked
  });

  it("the service's model: ConfigError without an embedder; scrub", async () => {
    // one at a time: a call made before the previous one is awaited would reject unhandled
    for (const call of [() => mem.embedPassages(), () => mem.embedRecords(), () => mem.calibrate()]) {
      assert.equal((await failure(call(), ConfigError)).status, 400);
    }
    const scrubbed = await mem.scrub();
    assert.equal(scrubbed.scrubbed, true);
  });

  it("review: find, list, reject, approve", async () => {
    const later = "2025-06-01T00:00:00Z";
    const found = await mem.review(undefined, { as_of: later });
    assert.ok(found.length > 0, "a year later, records nobody used are proposed");
    assert.ok(found.every((p) => p.status === "open"));
    const open = await mem.proposals("open");
    assert.deepEqual(new Set(open.map((p) => p.id)), new Set(found.map((p) => p.id)));
    const [first, second] = open;
    const rejected = await mem.reject((first as { id: string }).id, "keep it");
    assert.deepEqual([rejected.status, rejected.decision_reason], ["rejected", "keep it"]);
    assert.deepEqual((await mem.proposals("rejected")).map((p) => p.id), [rejected.id]);
    if (second) {
      try {
        const approved = await mem.approve(second.id);
        assert.equal(approved.status, "approved");
      } catch (err) {
        assert.ok(err instanceof ConflictError, String(err)); // its records changed since
      }
    }
    assert.equal((await failure(mem.approve("no-such-proposal"), NotFoundError)).status, 404);
  });

  it("the access log", async () => {
    assert.equal(await mem.setAccessLog(true), true);
    await mem.recall("harbour", { agent: "maria" });
    const log = await mem.accesses();
    assert.ok(log.length >= 1);
    assert.deepEqual([log[0]?.record_id, log[0]?.verb, log[0]?.query], [ids.maria, "recall", "harbour"]);
    assert.equal((await mem.accesses(ids.maria, { limit: 1 })).length, 1);
    assert.deepEqual(await mem.accesses("no-such-record"), []);
    assert.equal(await mem.setAccessLog(false), false);
  });

  it("export; import into another store, refused where the ids already are", async () => {
    const archive = await mem.export();
    const lines = archive.trim().split("\n").map((line) => JSON.parse(line) as { type?: string; id?: string });
    const records = lines.filter((l) => l.type === "record").map((l) => l.id);
    assert.ok(records.includes(ids.moved) && records.includes(ids.maria));
    assert.ok(lines.some((l) => l.type === "event"));
    const other = new Client(required("CHRONOMEM_KEYED_URL"), {
      key: required("CHRONOMEM_ADMIN_KEY"), space: "copy", fetch: recording(sent),
    });
    const report = await other.import(new TextEncoder().encode(archive));
    assert.equal(report.records, records.length);
    assert.equal((await other.get(ids.moved as string)).text, "the party moved to 6pm");
    const refused = await failure(mem.import(archive), ConflictError);
    assert.equal(refused.status, 409);
  });

  it("422s: the service's validation, with the field", async () => {
    const importance = await failure(mem.remember("x", { importance: 42 }), InvalidInputError);
    assert.deepEqual([importance.status, importance.field], [422, "importance"]);
    const k = await failure(mem.recall("x", { k: 0 }), InvalidInputError);
    assert.deepEqual([k.status, k.field], [422, "k"]);
    const naive = await failure(mem.setClock("2024-03-01T09:00:00"), InvalidInputError);
    assert.deepEqual([naive.status, naive.field], [422, "now"]);
    const backwards = await failure(mem.advanceClock(-5), InvalidInputError);
    assert.equal(backwards.field, "by");
    const local = await failure(mem.get(""), InvalidInputError); // never sent
    assert.deepEqual([local.status, local.field], [0, "record_id"]);
  });

  it("request id and headers travel; the audit records the request id", async () => {
    const seen: Sent[] = [];
    const named = mem.with({ requestId: "ts-req-31", headers: { "X-Proxy": "yes" }, fetch: recording(seen) });
    const id = stored(await named.remember("a named write", { agent: "maria" }));
    assert.equal(seen[0]?.headers["x-request-id"], "ts-req-31");
    assert.equal(seen[0]?.headers["x-proxy"], "yes");
    assert.equal(seen[0]?.headers["content-type"], "application/json");
    await named.verify(id, { reason: "checked" });
    const verified = (await mem.audit(id)).find((e) => e.action === "verify");
    assert.equal(verified?.detail["request_id"], "ts-req-31");
    sent.push(...seen);
  });

  it("no answer: timeouts, aborts and an unreachable service are ServiceError (status 0)", async () => {
    const hanging: typeof fetch = (_input, init) =>
      new Promise((_resolve, reject) => {
        const held = setTimeout(() => reject(new Error("not aborted")), 10_000); // as a socket would
        init?.signal?.addEventListener("abort", () => {
          clearTimeout(held);
          reject(init.signal?.reason);
        });
      });
    const slow = await failure(mem.with({ fetch: hanging, timeout: 50 }).agents(), ServiceError);
    assert.match(slow.message, /no answer within 50 ms/);
    assert.equal(slow.status, 0);
    const controller = new AbortController();
    controller.abort();
    const aborted = await failure(mem.with({ signal: controller.signal }).agents(), ServiceError);
    assert.match(aborted.message, /aborted/);
    const nowhere = await failure(new Client("http://127.0.0.1:9", { timeout: 5000 }).health(), ServiceError);
    assert.match(nowhere.message, /cannot reach the chronomem service at http:\/\/127\.0\.0\.1:9/);
  });

  feedTests(mem, sent);

  it("sent every route of the table", () => {
    const missing = Object.entries(ROUTES).filter(([, route]) => {
      const pattern = new RegExp(`^${route.path.replace(/\{\w+\}/g, "[^/]+")}$`);
      return !sent.some((s) => s.method === route.method && pattern.test(s.path));
    });
    assert.deepEqual(missing.map(([name]) => name), []);
  });
});
