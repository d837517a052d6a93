/** Cursor lists (`{data, nextCursor}`, newest first) as async iterators. */

export interface CursorPage<T> {
  data: T[];
  /** Pass as `before` for the next page; null on the last page. */
  nextCursor: string | null;
}

/** The query of every cursor list. */
export interface ListParams {
  /** Items per page (1–100 on the service; its default when omitted). */
  limit?: number;
  /** Start after this cursor (a `nextCursor`) or ISO 8601 time. */
  before?: string;
}

/**
 * Every item of a cursor list, fetching pages as the loop needs them:
 *
 * ```ts
 * for await (const job of client.screenshots.list({ limit: 50 })) console.log(job.id);
 * ```
 *
 * `pages()` walks page by page instead; `toArray(max)` collects.
 */
export class Paginator<T> implements AsyncIterable<T> {
  constructor(
    private readonly fetchPage: (before: string | undefined) => Promise<CursorPage<T>>,
    private readonly start?: string,
  ) {}

  /** The pages, first to last. */
  async *pages(): AsyncGenerator<CursorPage<T>> {
    let before = this.start;
    const seen = new Set<string>();
    for (;;) {
      const page = await this.fetchPage(before);
      yield page;
      const next = page.nextCursor;
      if (!next || page.data.length === 0 || seen.has(next)) return;
      seen.add(next);
      before = next;
    }
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for await (const page of this.pages()) {
      for (const item of page.data) yield item;
    }
  }

  /** The first page only. */
  firstPage(): Promise<CursorPage<T>> {
    return this.fetchPage(this.start);
  }

  /** Up to `max` items (all of them without it). */
  async toArray(max = Infinity): Promise<T[]> {
    const out: T[] = [];
    if (max <= 0) return out;
    for await (const item of this) {
      out.push(item);
      if (out.length >= max) break;
    }
    return out;
  }
}
