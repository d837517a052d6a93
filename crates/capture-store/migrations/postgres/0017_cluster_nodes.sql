-- Where each node of a deployment can be reached by the others (its internal address), so a
-- tool call for a live session held by one node can be forwarded there from any node, and a
-- node without a browser can pass a live run's DevTools connection to one that has one.
CREATE TABLE cluster_nodes (
    node_id TEXT PRIMARY KEY,
    internal_url TEXT NOT NULL,
    has_browser BIGINT NOT NULL DEFAULT 0,
    seen_at BIGINT NOT NULL
);
