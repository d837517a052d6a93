//! The `snapshot` tool's accessibility tree and its element refs, from the raw answer of
//! `Accessibility.getFullAXTree`.
//!
//! A ref is `e` followed by the element's DevTools *backend node id*: the id Chromium gives
//! a DOM node for its whole life. So a ref is stable — the same element has the same ref in
//! every later snapshot, whatever changed around it — and needs no table on the server: a
//! later tool resolves it with `DOM.resolveNode`. An element that is gone (removed, or the
//! page navigated away) fails with `no such element ref e42`.
//!
//! The tree leaves out what an agent cannot act on or read: nodes Chromium marks ignored,
//! and nameless layout wrappers (`generic`, `none`), whose children move up a level. A
//! `StaticText` that only repeats its parent's name (a button's label) is left out too.

use serde::Serialize;
use serde_json::Value;

/// Most entries in one snapshot (the rest is cut, `truncated: true`).
pub const MAX_ENTRIES: usize = 2_000;
/// Longest name or value shown per entry.
const MAX_NAME: usize = 200;

/// One element of a snapshot.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// `e<backend node id>` (None for the rare node without a DOM node).
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    pub role: String,
    pub name: String,
    /// A field's value, a slider's number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `checked`, `disabled`, `expanded`, `level=2`…
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub states: Vec<String>,
    pub depth: usize,
}

/// A snapshot: the entries in document order, and whether it was cut.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub entries: Vec<Entry>,
    pub truncated: bool,
}

/// The ref of a backend node id.
pub fn ref_of(backend_node_id: i64) -> String {
    format!("e{backend_node_id}")
}

/// The backend node id of a ref (`e42`); None when it is not one.
pub fn parse_ref(r: &str) -> Option<i64> {
    let digits = r.trim().strip_prefix('e')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|n: &i64| *n > 0)
}

fn ax_text(v: Option<&Value>) -> String {
    match v.and_then(|v| v.get("value")) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn cut(s: &str) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() <= MAX_NAME {
        return s;
    }
    let mut out: String = s.chars().take(MAX_NAME).collect();
    out.push('…');
    out
}

/// Properties shown beside an entry, in this order.
const STATES: &[&str] =
    &["checked", "pressed", "selected", "expanded", "disabled", "required", "readonly", "focused", "invalid", "level"];

fn states(node: &Value) -> Vec<String> {
    let props = node.get("properties").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut out = Vec::new();
    for want in STATES {
        let Some(p) = props.iter().find(|p| p.get("name").and_then(Value::as_str) == Some(want)) else { continue };
        let v = p.pointer("/value/value").cloned().unwrap_or(Value::Null);
        match v {
            Value::Bool(true) => out.push((*want).to_string()),
            Value::Bool(false) | Value::Null => {}
            Value::String(s) if s == "false" => {}
            Value::String(s) if s == "true" => out.push((*want).to_string()),
            Value::String(s) if *want == "checked" && s == "mixed" => out.push("checked=mixed".into()),
            other if *want == "level" => {
                out.push(format!("level={}", other.as_str().map_or(other.to_string(), str::to_string)))
            }
            _ => {}
        }
    }
    out
}

/// Build the snapshot from `Accessibility.getFullAXTree`'s `nodes`.
pub fn build(nodes: &[Value]) -> Snapshot {
    let mut by_id = std::collections::HashMap::new();
    for n in nodes {
        if let Some(id) = n.get("nodeId").and_then(Value::as_str) {
            by_id.insert(id.to_string(), n);
        }
    }
    let mut snap = Snapshot::default();
    // The root: the node without a parent (the document), else the first.
    let root = nodes.iter().find(|n| n.get("parentId").is_none()).or_else(|| nodes.first());
    if let Some(root) = root {
        walk(root, 0, None, &by_id, &mut snap, 0);
    }
    snap
}

fn walk(
    node: &Value,
    depth: usize,
    parent_name: Option<&str>,
    by_id: &std::collections::HashMap<String, &Value>,
    snap: &mut Snapshot,
    guard: usize,
) {
    if snap.entries.len() >= MAX_ENTRIES {
        snap.truncated = true;
        return;
    }
    if guard > 512 {
        return;
    }
    let ignored = node.get("ignored").and_then(Value::as_bool).unwrap_or(false);
    let role = ax_text(node.get("role"));
    let name = cut(&ax_text(node.get("name")));
    let value = cut(&ax_text(node.get("value")));
    let wrapper = matches!(role.as_str(), "generic" | "none" | "presentation" | "InlineTextBox" | "LineBreak" | "")
        && name.is_empty()
        && value.is_empty();
    let repeats_parent = role == "StaticText" && parent_name.is_some_and(|p| !p.is_empty() && p == name);
    let empty_text = role == "StaticText" && name.is_empty();
    let shown = !(ignored || wrapper || repeats_parent || empty_text);
    let (child_depth, child_parent) = if shown {
        let backend = node.get("backendDOMNodeId").and_then(Value::as_i64);
        snap.entries.push(Entry {
            reference: backend.map(ref_of),
            role: if role == "StaticText" { "text".into() } else { role.clone() },
            name: name.clone(),
            value: (!value.is_empty()).then_some(value),
            states: states(node),
            depth,
        });
        (depth + 1, Some(name.as_str()))
    } else {
        (depth, parent_name)
    };
    // A role with a name of its own (a link, a button) speaks for its text.
    let child_parent = child_parent.map(str::to_string);
    for c in node.get("childIds").and_then(Value::as_array).into_iter().flatten() {
        if let Some(child) = c.as_str().and_then(|id| by_id.get(id)) {
            walk(child, child_depth, child_parent.as_deref(), by_id, snap, guard + 1);
        }
    }
}

impl Snapshot {
    /// The tree as indented lines: `- button "Sign up" [disabled] [ref=e12]`.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for e in &self.entries {
            out.push_str(&"  ".repeat(e.depth));
            out.push_str("- ");
            out.push_str(&e.role);
            if !e.name.is_empty() {
                out.push_str(&format!(" {}", serde_json::to_string(&e.name).unwrap_or_default()));
            }
            if let Some(v) = &e.value {
                out.push_str(&format!(" value={}", serde_json::to_string(v).unwrap_or_default()));
            }
            for s in &e.states {
                out.push_str(&format!(" [{s}]"));
            }
            if let Some(r) = &e.reference {
                out.push_str(&format!(" [ref={r}]"));
            }
            out.push('\n');
        }
        if self.truncated {
            out.push_str(&format!("… (cut at {MAX_ENTRIES} entries)\n"));
        }
        out
    }

    /// The entries matching a role (exact, any case), a name (contained, any case, or equal
    /// when `exact`) and a text (an entry whose name or value contains it), in document order.
    pub fn find(&self, role: Option<&str>, name: Option<&str>, text: Option<&str>, exact: bool) -> Vec<&Entry> {
        let has = |hay: &str, needle: &str| {
            if exact { hay.eq_ignore_ascii_case(needle) } else { hay.to_lowercase().contains(&needle.to_lowercase()) }
        };
        self.entries
            .iter()
            .filter(|e| e.reference.is_some())
            .filter(|e| role.is_none_or(|r| e.role.eq_ignore_ascii_case(r)))
            .filter(|e| name.is_none_or(|n| has(&e.name, n)))
            .filter(|e| text.is_none_or(|t| has(&e.name, t) || e.value.as_deref().is_some_and(|v| has(v, t))))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(id: &str, parent: Option<&str>, role: &str, name: &str, backend: i64, children: &[&str]) -> Value {
        let mut n = json!({
            "nodeId": id, "ignored": false,
            "role": {"type": "role", "value": role},
            "name": {"type": "computedString", "value": name},
            "childIds": children, "backendDOMNodeId": backend,
        });
        if let Some(p) = parent {
            n["parentId"] = json!(p);
        }
        n
    }

    /// A sign-up page as Chromium describes it: wrappers, an ignored node, a label's text.
    fn page() -> Vec<Value> {
        let mut ignored = node("5", Some("2"), "generic", "", 50, &["6"]);
        ignored["ignored"] = json!(true);
        let mut email = node("6", Some("5"), "textbox", "Email", 60, &[]);
        email["value"] = json!({"type": "string", "value": "ada@example.com"});
        email["properties"] = json!([{"name": "required", "value": {"type": "boolean", "value": true}},
                                     {"name": "focused", "value": {"type": "boolean", "value": false}}]);
        let mut terms = node("9", Some("2"), "checkbox", "I agree", 90, &[]);
        terms["properties"] = json!([{"name": "checked", "value": {"type": "tristate", "value": "true"}}]);
        let mut h1 = node("3", Some("2"), "heading", "Create   your\naccount", 30, &["4"]);
        h1["properties"] = json!([{"name": "level", "value": {"type": "integer", "value": 1}}]);
        vec![
            node("1", None, "RootWebArea", "Sign up", 1, &["2"]),
            node("2", Some("1"), "generic", "", 20, &["3", "5", "7", "9", "11"]),
            h1,
            node("4", Some("3"), "StaticText", "Create your account", 40, &[]),
            ignored,
            email,
            node("7", Some("2"), "button", "Sign up", 70, &["8"]),
            node("8", Some("7"), "StaticText", "Sign up", 80, &[]),
            terms,
            node("11", Some("2"), "StaticText", "Already a member?", 110, &["404"]),
        ]
    }

    #[test]
    fn the_tree_keeps_what_an_agent_acts_on_with_stable_refs() {
        let snap = build(&page());
        let text = snap.text();
        assert_eq!(
            text,
            "- RootWebArea \"Sign up\" [ref=e1]\n\
             \x20 - heading \"Create your account\" [level=1] [ref=e30]\n\
             \x20 - textbox \"Email\" value=\"ada@example.com\" [required] [ref=e60]\n\
             \x20 - button \"Sign up\" [ref=e70]\n\
             \x20 - checkbox \"I agree\" [checked] [ref=e90]\n\
             \x20 - text \"Already a member?\" [ref=e110]\n"
        );
        assert!(!snap.truncated);
        // The same page described again (nodes renumbered by DevTools) gives the same refs.
        let mut again = page();
        for (i, n) in again.iter_mut().enumerate() {
            n["nodeId"] = json!(format!("x{i}"));
        }
        let ids: Vec<String> = again.iter().map(|n| n["nodeId"].as_str().unwrap().to_string()).collect();
        let renumber = |v: &Value| -> Value {
            let old: Vec<String> = page().iter().map(|n| n["nodeId"].as_str().unwrap().to_string()).collect();
            let map = |s: &str| old.iter().position(|o| o == s).map_or(s.to_string(), |i| ids[i].clone());
            let mut v = v.clone();
            if let Some(p) = v.get("parentId").and_then(Value::as_str).map(map) {
                v["parentId"] = json!(p);
            }
            let kids: Vec<String> =
                v["childIds"].as_array().unwrap().iter().map(|c| map(c.as_str().unwrap())).collect();
            v["childIds"] = json!(kids);
            v
        };
        let again: Vec<Value> = again.iter().map(renumber).collect();
        assert_eq!(build(&again).text(), text);
    }

    #[test]
    fn refs_parse_only_in_their_own_shape() {
        assert_eq!(parse_ref("e42"), Some(42));
        assert_eq!(parse_ref(" e7 "), Some(7));
        assert_eq!(ref_of(42), "e42");
        for bad in ["42", "e", "e-1", "e0", "ex", "#go", "e1.5", ""] {
            assert_eq!(parse_ref(bad), None, "{bad}");
        }
    }

    #[test]
    fn find_matches_role_name_and_text() {
        let snap = build(&page());
        let refs = |v: Vec<&Entry>| v.into_iter().filter_map(|e| e.reference.clone()).collect::<Vec<_>>();
        assert_eq!(refs(snap.find(Some("button"), None, None, false)), ["e70"]);
        assert_eq!(refs(snap.find(Some("BUTTON"), Some("sign"), None, false)), ["e70"]);
        assert_eq!(refs(snap.find(None, Some("sign up"), None, true)), ["e1", "e70"]);
        assert!(snap.find(Some("button"), Some("sign"), None, true).is_empty());
        assert_eq!(refs(snap.find(None, None, Some("ada@"), false)), ["e60"]);
        assert_eq!(refs(snap.find(Some("text"), None, Some("member"), false)), ["e110"]);
        assert!(snap.find(Some("link"), None, None, false).is_empty());
    }

    #[test]
    fn a_huge_page_is_cut_and_says_so() {
        let kids: Vec<String> = (0..3_000).map(|i| format!("k{i}")).collect();
        let kid_refs: Vec<&str> = kids.iter().map(String::as_str).collect();
        let mut nodes = vec![node("r", None, "RootWebArea", "big", 1, &kid_refs)];
        for (i, k) in kids.iter().enumerate() {
            nodes.push(node(k, Some("r"), "link", &format!("link {i}"), 10 + i as i64, &[]));
        }
        let snap = build(&nodes);
        assert_eq!(snap.entries.len(), MAX_ENTRIES);
        assert!(snap.truncated && snap.text().ends_with("(cut at 2000 entries)\n"));
        // Long names are cut, whitespace folded.
        let long = build(&[node("r", None, "button", &"x ".repeat(400), 5, &[])]);
        assert!(long.entries[0].name.ends_with('…') && long.entries[0].name.chars().count() == MAX_NAME + 1);
    }
}
