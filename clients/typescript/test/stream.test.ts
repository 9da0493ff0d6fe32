/** The Server-Sent Events reader on its own: chunks that end anywhere (inside a line, between
 * CR and LF, inside a UTF-8 character), comments, `retry:`, multi-line data, a cut-off event. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { serverSentEvents, type ServerSentEvent } from "../src/stream.js";

const STREAM =
  "retry: 2000\r\n\r\n: keep-alive\n\n" +
  'id: 1\r\nevent: change\r\ndata: {"text":"café ☕"}\r\n\r\n' +
  "id: 2\revent: change\rdata: a\rdata:b\r\r" +
  "data: no type\n\n" +
  "id: 3\nevent: change\ndata: cut off";

const EXPECTED: ServerSentEvent[] = [
  { event: "change", data: '{"text":"café ☕"}', id: "1" },
  { event: "change", data: "a\nb", id: "2" },
  { event: "message", data: "no type", id: "2" },
];

/** A body of `chunks`, then its end — or, given `cancelled`, no end: a live stream, which
 * only cancelling stops. */
function body(chunks: Uint8Array[], cancelled?: () => void): ReadableStream<Uint8Array> {
  let next = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      const chunk = chunks[next++];
      if (chunk !== undefined) controller.enqueue(chunk);
      else if (cancelled === undefined) controller.close();
      else return new Promise(() => undefined);
    },
    cancel: () => cancelled?.(),
  });
}

async function read(chunks: Uint8Array[]): Promise<ServerSentEvent[]> {
  const out: ServerSentEvent[] = [];
  for await (const event of serverSentEvents(body(chunks))) out.push(event);
  return out;
}

describe("serverSentEvents", () => {
  const bytes = new TextEncoder().encode(STREAM);

  it("reads the events of one chunk, and of one chunk per byte", async () => {
    assert.deepEqual(await read([bytes]), EXPECTED);
    assert.deepEqual(await read([...bytes].map((b) => Uint8Array.of(b))), EXPECTED);
  });

  it("reads the same events wherever the stream is split in two", async () => {
    for (let at = 1; at < bytes.length; at++) {
      assert.deepEqual(await read([bytes.subarray(0, at), bytes.subarray(at)]), EXPECTED, `split at ${at}`);
    }
  });

  it("cancels the body when the consumer stops", async () => {
    let cancelled = false;
    for await (const event of serverSentEvents(body([bytes], () => (cancelled = true)))) {
      assert.equal(event.id, "1");
      break;
    }
    assert.equal(cancelled, true);
  });
});
