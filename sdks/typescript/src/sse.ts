/** Server-sent events read from a fetch body stream (no EventSource: it cannot send the API key). */

export interface ServerSentEvent {
  /** The event's name (`message` when the stream gave none). */
  event: string;
  /** The data lines, joined with `\n`. */
  data: string;
  id?: string;
}

/** The events of `body` as they arrive; comments (`: ping`) are skipped. */
export async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let event = '';
  let data: string[] = [];
  let id: string | undefined;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buffer.search(/\r\n|\r|\n/)) >= 0) {
        // A `\r` at the end of what arrived may be the first half of `\r\n`.
        if (!done && nl === buffer.length - 1 && buffer[nl] === '\r') break;
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + (buffer.startsWith('\r\n', nl) ? 2 : 1));
        if (line === '') {
          if (data.length || event) {
            const e: ServerSentEvent = { event: event || 'message', data: data.join('\n') };
            if (id !== undefined) e.id = id;
            yield e;
          }
          event = '';
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? '' : line.slice(colon + 1);
        if (val.startsWith(' ')) val = val.slice(1);
        if (field === 'event') event = val;
        else if (field === 'data') data.push(val);
        else if (field === 'id') id = val;
      }
      if (done) return;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}
