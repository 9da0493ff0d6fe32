/**
 * The change feed and its webhooks against the real services (registered inside
 * service.test.ts's suite, so its last test sees these routes sent too): the feed read back in
 * seq order, a long poll answered by a write, `watch` following commits, resuming from a seq
 * and reconnecting after a dropped connection with `Last-Event-ID`, webhook subscriptions with
 * a delivery to a receiver here (signed), and the service's own feed of admin keys.
 */
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { it } from "node:test";

import {
  Client,
  InvalidInputError,
  NotFoundError,
  ServiceError,
  type Change,
  type WriteResult,
} from "../src/index.js";
import { failure, recording, required, type Sent } from "./env.js";

const id = (result: WriteResult): string => {
  assert.equal(result.stored, true);
  return result.id as string;
};

/** Resolves once `check` answers something other than `undefined` (polled every 50 ms). */
async function until<T>(check: () => Promise<T | undefined>, what: string, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`no ${what} within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A `fetch` that records what it sends and cuts its first change stream right after the
 * first change, as a dropped connection would (undici's `TypeError: terminated`). */
function dropping(into: Sent[]): typeof fetch {
  const send = recording(into);
  let streams = 0;
  return async (input, init) => {
    const response = await send(input, init);
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    if (!url.includes("/changes/stream") || streams++ > 0 || response.body === null) return response;
    const reader = response.body.getReader();
    let held = Buffer.alloc(0);
    let cut = false;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (cut) {
          await reader.cancel();
          controller.error(new TypeError("terminated"));
          return;
        }
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return controller.close();
          held = Buffer.concat([held, value]);
          const end = held.indexOf("\n\n", held.indexOf("data:"));
          if (held.indexOf("data:") >= 0 && end >= 0) {
            controller.enqueue(new Uint8Array(held.subarray(0, end + 2)));
            cut = true;
            return;
          }
        }
      },
      cancel: () => reader.cancel(),
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };
}

const SECRET = "a secret of the feed's tests";

interface Delivery {
  headers: IncomingHttpHeaders;
  body: string;
}

/** Registers the feed's tests; `mem` is the open service's client, `sent` what the run sent. */
export function feedTests(mem: Client, sent: Sent[]): void {
  const feed = mem.with({ space: "feed" }); // a space of its own: its seqs start at 1
  const ids: { [name: string]: string } = {};

  it("changes: every write, in seq order, with its kind and text", async () => {
    ids.mill = id(await feed.remember("the mill opens at dawn", { agent: "ada" }));
    ids.bakery = id(await feed.remember("the bakery sells rye", { agent: "ada" }));
    await feed.closeRecord(ids.bakery, "sold out");
    await feed.verify(ids.mill);
    const changes = await feed.changes();
    assert.deepEqual(changes.map((c) => c.seq), [1, 2, 3, 4]);
    assert.deepEqual(changes.map((c) => c.kind), ["write", "write", "close", "verify"]);
    assert.deepEqual(changes.map((c) => c.record_id), [ids.mill, ids.bakery, ids.bakery, ids.mill]);
    assert.deepEqual(changes.map((c) => c.text), ["the mill opens at dawn", "the bakery sells rye", null, null]);
    assert.equal(changes[2]?.reason, "sold out");
    assert.deepEqual(changes.map((c) => [c.agent, c.actor]), [["ada", null], ["ada", null], [null, "local"], [null, "local"]]);
    assert.ok(changes.every((c) => c.space === "feed" && /^chg_\w+$/.test(c.id)));
    assert.ok(changes.every((c) => !Number.isNaN(Date.parse(c.at))));
    assert.equal(new Set(changes.map((c) => c.id)).size, 4);
    assert.deepEqual((await feed.changes(2, { limit: 1 })).map((c) => c.seq), [3]);
    assert.deepEqual(await feed.changes(4), []);
  });

  it("changes with wait: a long poll answered when a write commits, past the client's timeout", async () => {
    const started = performance.now();
    // 300 ms of timeout, extended by the 3 s the service may wait: the write at 600 ms answers it
    const poll = feed.with({ timeout: 300 }).changes(4, { wait: 3 });
    await new Promise((resolve) => setTimeout(resolve, 600));
    ids.river = id(await feed.remember("the river is rising", { agent: "ada" }));
    const changes = await poll;
    const elapsed = performance.now() - started;
    assert.deepEqual(changes.map((c) => [c.seq, c.kind, c.record_id, c.text]),
      [[5, "write", ids.river, "the river is rising"]]);
    assert.ok(elapsed >= 550 && elapsed < 2500, `answered after ${elapsed} ms`);

    const idle = performance.now();
    assert.deepEqual(await feed.changes(5, { wait: 0.3 }), []); // nothing: empty after the wait
    assert.ok(performance.now() - idle >= 250);
  });

  it("watch: the changes after a seq, then each as it commits; the signal ends it", async () => {
    const controller = new AbortController();
    const changes = feed.watch(3, { signal: controller.signal });
    assert.deepEqual([(await changes.next()).value?.seq, (await changes.next()).value?.seq], [4, 5]);
    const pending = changes.next();
    ids.ferry = id(await feed.remember("the ferry is late", { agent: "ada" }));
    const next = (await pending).value as Change;
    assert.deepEqual([next.seq, next.kind, next.record_id, next.text], [6, "write", ids.ferry, "the ferry is late"]);
    const waiting = changes.next();
    controller.abort();
    assert.deepEqual(await waiting, { done: true, value: undefined });

    // resume from the last seq seen: nothing repeated, the next write next
    const seen: Change[] = [];
    const resumed = feed.watch(next.seq);
    const reading = (async () => {
      for await (const change of resumed) {
        seen.push(change);
        // (by its text: the stream may bring the write before the write's own answer comes)
        if (change.text === "the well is deep") break; // closes the connection
      }
    })();
    ids.well = id(await feed.remember("the well is deep", { agent: "ada" }));
    await reading;
    assert.deepEqual(seen.map((c) => [c.seq, c.record_id]), [[7, ids.well]]);
  });

  it("watch reconnects after a dropped connection with Last-Event-ID, or throws if told not to", async () => {
    const seen: Sent[] = [];
    const controller = new AbortController();
    const changes = feed.with({ fetch: dropping(seen) }).watch(5, { signal: controller.signal, reconnect: 20 });
    assert.equal((await changes.next()).value?.seq, 6); // then the connection drops
    assert.equal((await changes.next()).value?.seq, 7); // from the second connection
    controller.abort();
    assert.equal((await changes.next()).done, true);
    const streams = seen.filter((s) => s.path.endsWith("/changes/stream"));
    assert.deepEqual(streams.map((s) => s.headers["last-event-id"]), [undefined, "6"]);
    assert.ok(streams.every((s) => s.headers["accept"] === "text/event-stream"));
    sent.push(...seen);

    const once = feed.with({ fetch: dropping([]) }).watch(5, { reconnect: false });
    assert.equal((await once.next()).value?.seq, 6);
    const dropped = await failure(once.next(), ServiceError);
    assert.deepEqual([dropped.status, /dropped: terminated/.test(dropped.message)], [0, true]);
  });

  it("webhooks: subscribe (the secret once), list, get, deliveries signed, failures, remove", async () => {
    const deliveries: Delivery[] = [];
    const receiver = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        deliveries.push({ headers: request.headers, body: Buffer.concat(chunks).toString("utf8") });
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    try {
      const hook = await feed.addWebhook(url, { secret: SECRET, after: 4 });
      assert.match(hook.id, /^wh_/);
      assert.deepEqual([hook.space, hook.url, hook.delivered, hook.failures, hook.secret], ["feed", url, 4, 0, SECRET]);
      const refusing = await feed.addWebhook("http://127.0.0.1:9/nobody"); // from now on, a new secret
      assert.equal(refusing.delivered, 7);
      assert.match(refusing.secret ?? "", /^whsec_/);

      const listed = await feed.webhooks();
      assert.deepEqual(listed.map((h) => [h.id, h.secret]).sort(), [[hook.id, null], [refusing.id, null]].sort());
      const got = await feed.webhook(hook.id);
      assert.deepEqual([got.url, got.secret, Date.parse(got.created_at)], [url, null, Date.parse(hook.created_at)]);

      // the service's delivery loop POSTs 5, 6, 7 in order, each signed with the secret
      await until(async () => (deliveries.length >= 3 ? true : undefined), "three deliveries");
      const bodies = deliveries.map((d) => JSON.parse(d.body) as Change);
      assert.deepEqual(bodies.map((c) => c.seq), [5, 6, 7]);
      assert.equal(bodies[0]?.text, "the river is rising");
      for (const [i, d] of deliveries.entries()) {
        assert.equal(d.headers["chronomem-event-id"], bodies[i]?.id);
        const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(d.headers["chronomem-signature"])) ?? [];
        assert.equal(v1, createHmac("sha256", SECRET).update(`${t}.${d.body}`).digest("hex"));
      }
      await until(async () => ((await feed.webhook(hook.id)).delivered === 7 ? true : undefined), "the cursor at 7");
      assert.deepEqual(await feed.webhookFailures(hook.id), []);

      // a receiver that is not there: nothing to send yet, then a write makes a failed attempt
      await feed.remember("the lamps are lit", { agent: "ada" });
      const failures = await until(async () => {
        const found = await feed.webhookFailures(refusing.id);
        return found.length > 0 ? found : undefined;
      }, "a failed attempt");
      assert.deepEqual([failures[0]?.webhook_id, failures[0]?.seq, failures[0]?.attempt, failures[0]?.status],
        [refusing.id, 8, 1, null]);
      assert.ok(failures[0]?.error);
      assert.ok((await feed.webhook(refusing.id)).failures >= 1);

      assert.equal(await feed.removeWebhook(hook.id), undefined);
      assert.equal(await feed.removeWebhook(refusing.id), undefined);
      assert.equal((await failure(feed.webhook(hook.id), NotFoundError)).status, 404);
      assert.equal((await failure(feed.removeWebhook(hook.id), NotFoundError)).status, 404);
      assert.equal((await failure(feed.webhookFailures(hook.id), NotFoundError)).status, 404);
      assert.deepEqual(await feed.webhooks(), []);
    } finally {
      receiver.close();
    }
  });

  it("422s of the feed: a negative seq, a URL that is not http(s)", async () => {
    // one at a time: a call made before the previous one is awaited would reject unhandled
    for (const call of [() => feed.changes(-1), () => feed.watch(-1).next(), () => mem.serviceChanges(-1)]) {
      const refused = await failure(call(), InvalidInputError);
      assert.deepEqual([refused.status, refused.field], [422, "after"]);
    }
    const url = await failure(feed.addWebhook("ftp://example.com/hook"), InvalidInputError);
    assert.deepEqual([url.status, url.field], [422, "url"]);
    const empty = await failure(feed.addWebhook(""), InvalidInputError); // never sent
    assert.deepEqual([empty.status, empty.field], [0, "url"]);
  });

  it("serviceChanges: the service's own feed holds the admin keys, a space's its keys", async () => {
    const admin = new Client(required("CHRONOMEM_KEYED_URL"), { key: required("CHRONOMEM_ADMIN_KEY"), fetch: recording(sent) });
    const keyId = (token: string): string => token.split("_")[1] as string;
    const service = await admin.serviceChanges();
    assert.deepEqual(service.map((c) => [c.seq, c.kind, c.space, c.detail["key_id"], c.detail["scope"], c.detail["change"]]),
      [[1, "key", "", keyId(required("CHRONOMEM_ADMIN_KEY")), "admin", "created"]]);
    assert.deepEqual(await admin.serviceChanges(1, { wait: 0.2 }), []);
    const town = await admin.with({ space: "town" }).changes(0, { limit: 1 });
    assert.deepEqual(town.map((c) => [c.kind, c.detail["key_id"], c.detail["scope"]]),
      [["key", keyId(required("CHRONOMEM_READ_KEY")), "read"]]);
    assert.deepEqual(await mem.serviceChanges(), []); // the open service has no keys
  });
}
