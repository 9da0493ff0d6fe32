/**
 * Server-Sent Events read from a `fetch` body (the HTML standard's event stream format, the part
 * of it `GET …/changes/stream` uses): lines end with LF, CR or CRLF, a blank line ends an event,
 * `data:` lines join with LF, a line that starts with `:` is a comment (the service's keep-alive)
 * and `retry:` — the reconnection delay an `EventSource` would take — is left to the caller's
 * own setting. Bytes are decoded as UTF-8 as they arrive, so a chunk may end anywhere: inside a
 * line, between CR and LF, or inside a character. An event the stream ends in the middle of is
 * dropped, as an `EventSource` drops it.
 */

/** One event of the stream. */
export interface ServerSentEvent {
  /** `event:` (`"message"` when the event has none). */
  event: string;
  /** The `data:` lines, joined with LF. */
  data: string;
  /** The last `id:` seen so far in the stream (it carries over to later events), if any. */
  id: string | undefined;
}

/** The events of `body`, in order, until it ends; reading stops (and the body is cancelled)
 * when the consumer stops iterating. */
export async function* serverSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "";
  let data: string[] = [];
  let id: string | undefined;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      for (;;) {
        const end = buffer.search(/[\r\n]/);
        if (end < 0) break;
        // a CR last in the buffer may be the first half of a CRLF: wait for the next chunk
        if (buffer[end] === "\r" && end === buffer.length - 1 && !done) break;
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + (buffer.startsWith("\r\n", end) ? 2 : 1));
        if (line === "") {
          if (data.length > 0) yield { event: event || "message", data: data.join("\n"), id };
          event = "";
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const name = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (name === "data") data.push(value);
        else if (name === "event") event = value;
        else if (name === "id" && !value.includes("\0")) id = value;
        // "retry" and unknown fields: ignored
      }
      if (done) return;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
