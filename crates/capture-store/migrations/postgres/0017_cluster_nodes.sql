-- Where each node of a deployment can be reached by the others (its internal address), so a
-- tool call for a live session held by one node can be forwarded there from any node.
CREATE TABLE cluster_nodes (
    node_id TEXT PRIMARY KEY,
    internal_url TEXT NOT NULL,
    seen_at BIGINT NOT NULL
);
