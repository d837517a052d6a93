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
//! `StaticText` that only repeats its parent's name (a button's label) is left out too, and so
//! are a text's line boxes (`InlineTextBox`), which Chromium adds once it has laid them out.

use serde::Serialize;
use serde_json::Value;

/// Most entries in one snapshot (the rest is cut, `truncated: true`).
pub const MAX_ENTRIES: usize = 10_000;
/// Most characters of tree one `snapshot` answer carries (`maxChars`), and the default: what
/// does not fit is left out, and the answer says how much and how to read on.
pub const MAX_CHARS: usize = 20_000;
pub const DEFAULT_CHARS: usize = 8_000;
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
    build_from(nodes, None).unwrap_or_default()
}

/// The snapshot of the element with backend node id `root` and what is inside it (None: the
/// whole page). None when the page has no such element.
pub fn build_from(nodes: &[Value], root: Option<i64>) -> Option<Snapshot> {
    let mut by_id = std::collections::HashMap::new();
    for n in nodes {
        if let Some(id) = n.get("nodeId").and_then(Value::as_str) {
            by_id.insert(id.to_string(), n);
        }
    }
    let mut snap = Snapshot::default();
    let start = match root {
        // The document: the node without a parent, else the first.
        None => nodes.iter().find(|n| n.get("parentId").is_none()).or_else(|| nodes.first()),
        Some(backend) => {
            Some(nodes.iter().find(|n| n.get("backendDOMNodeId").and_then(Value::as_i64) == Some(backend))?)
        }
    };
    if let Some(start) = start {
        walk(start, 0, None, &by_id, &mut snap, 0);
    }
    Some(snap)
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
    // Chromium's line boxes of a text only say again what the text says.
    let line_box = role == "InlineTextBox";
    let shown = !(ignored || wrapper || repeats_parent || empty_text || line_box);
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

impl Entry {
    /// The entry without its indentation: `button "Sign up" [disabled] [ref=e12]`.
    pub fn line(&self) -> String {
        let mut out = self.role.clone();
        if !self.name.is_empty() {
            out.push_str(&format!(" {}", serde_json::to_string(&self.name).unwrap_or_default()));
        }
        if let Some(v) = &self.value {
            out.push_str(&format!(" value={}", serde_json::to_string(v).unwrap_or_default()));
        }
        for s in &self.states {
            out.push_str(&format!(" [{s}]"));
        }
        if let Some(r) = &self.reference {
            out.push_str(&format!(" [ref={r}]"));
        }
        out
    }
}

impl Snapshot {
    /// The tree, one indented line per entry: `  - button "Sign up" [disabled] [ref=e12]`.
    pub fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> =
            self.entries.iter().map(|e| format!("{}- {}", "  ".repeat(e.depth), e.line())).collect();
        if self.truncated {
            out.push(format!("… (cut at {MAX_ENTRIES} entries)"));
        }
        out
    }

    /// The tree as text: [`Snapshot::lines`], each ending in a newline.
    pub fn text(&self) -> String {
        self.lines().iter().map(|l| format!("{l}\n")).collect()
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

/// What changed from `before` to `after` (entries matched by ref; those without one by their
/// line): `+ <line>` for each entry that is new or changed, in the order of `after`, then
/// `- <line>` for each that is gone. How many entries stayed as they were comes second.
pub fn diff(before: &[Entry], after: &[Entry]) -> (Vec<String>, usize) {
    use std::collections::{HashMap, HashSet};
    let key = |e: &Entry| e.reference.clone().unwrap_or_else(|| e.line());
    let was: HashMap<String, String> = before.iter().map(|e| (key(e), e.line())).collect();
    let now: HashSet<String> = after.iter().map(key).collect();
    let (mut out, mut same) = (Vec::new(), 0);
    for e in after {
        match was.get(&key(e)) {
            Some(line) if *line == e.line() => same += 1,
            _ => out.push(format!("+ {}", e.line())),
        }
    }
    out.extend(before.iter().filter(|e| !now.contains(&key(e))).map(|e| format!("- {}", e.line())));
    (out, same)
}

/// The lines of `lines` from index `from` that fit in `max` characters (at least one, cut if
/// it alone is longer), each ending in a newline: the text and how many lines it holds.
pub fn lines_within(lines: &[String], from: usize, max: usize) -> (String, usize) {
    let mut out = String::new();
    let mut shown = 0;
    for l in lines.iter().skip(from) {
        if out.len() + l.len() + 1 > max {
            if shown == 0 {
                let mut end = max.saturating_sub(2).min(l.len());
                while !l.is_char_boundary(end) {
                    end -= 1;
                }
                out.push_str(&l[..end]);
                out.push_str("…\n");
                shown = 1;
            }
            break;
        }
        out.push_str(l);
        out.push('\n');
        shown += 1;
    }
    (out, shown)
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
            node("11", Some("2"), "StaticText", "Already a member?", 110, &["12"]),
            // Its line box, as Chromium adds once the text is laid out: not shown.
            node("12", Some("11"), "InlineTextBox", "Already a member?", 110, &[]),
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
        let kids: Vec<String> = (0..MAX_ENTRIES + 1_000).map(|i| format!("k{i}")).collect();
        let kid_refs: Vec<&str> = kids.iter().map(String::as_str).collect();
        let mut nodes = vec![node("r", None, "RootWebArea", "big", 1, &kid_refs)];
        for (i, k) in kids.iter().enumerate() {
            nodes.push(node(k, Some("r"), "link", &format!("link {i}"), 10 + i as i64, &[]));
        }
        let snap = build(&nodes);
        assert_eq!(snap.entries.len(), MAX_ENTRIES);
        assert!(snap.truncated && snap.text().ends_with("(cut at 10000 entries)\n"));
        // Long names are cut, whitespace folded.
        let long = build(&[node("r", None, "button", &"x ".repeat(400), 5, &[])]);
        assert!(long.entries[0].name.ends_with('…') && long.entries[0].name.chars().count() == MAX_NAME + 1);
    }

    #[test]
    fn a_part_of_the_page_and_what_changed() {
        // Scoped to the wrapper (not shown itself): what is inside it, one level up.
        let part = build_from(&page(), Some(20)).unwrap();
        assert_eq!(
            part.entries.first().map(|e| e.line()),
            Some("heading \"Create your account\" [level=1] [ref=e30]".into())
        );
        assert_eq!(part.entries.len(), 5);
        assert_eq!(build_from(&page(), Some(70)).unwrap().text(), "- button \"Sign up\" [ref=e70]\n");
        assert!(build_from(&page(), Some(999)).is_none(), "no such element");

        // One box checked off, the text gone, a button added.
        let before = build(&page()).entries;
        let mut after: Vec<Entry> = before.iter().filter(|e| e.reference.as_deref() != Some("e110")).cloned().collect();
        after.iter_mut().find(|e| e.reference.as_deref() == Some("e90")).unwrap().states.clear();
        after.push(Entry {
            reference: Some("e120".into()),
            role: "button".into(),
            name: "Undo".into(),
            value: None,
            states: vec![],
            depth: 1,
        });
        let (lines, same) = diff(&before, &after);
        assert_eq!(
            lines,
            [
                "+ checkbox \"I agree\" [ref=e90]",
                "+ button \"Undo\" [ref=e120]",
                "- text \"Already a member?\" [ref=e110]"
            ]
        );
        assert_eq!(same, 4);
        assert_eq!(diff(&before, &before), (vec![], 6));
    }

    #[test]
    fn a_page_of_lines_fits_its_budget() {
        let lines: Vec<String> = (0..100).map(|i| format!("- link \"link {i:02}\" [ref=e{i}]")).collect();
        let (text, shown) = lines_within(&lines, 0, 200);
        assert!(text.len() <= 200 && shown == text.lines().count() && shown > 3, "{text}");
        assert_eq!(text.lines().next(), Some(lines[0].as_str()));
        let (next, more) = lines_within(&lines, shown, 200);
        assert_eq!(next.lines().next(), Some(lines[shown].as_str()), "reading on starts where the last page stopped");
        assert!(more > 0);
        let (rest, n) = lines_within(&lines, 98, 10_000);
        assert_eq!((rest.lines().count(), n), (2, 2));
        assert_eq!(lines_within(&lines, 100, 200), (String::new(), 0));
        // One line longer than the budget is cut to it.
        let (cut, n) = lines_within(&["x".repeat(500)], 0, 100);
        assert!(cut.len() <= 100 + 3 && n == 1 && cut.ends_with("…\n"));
    }
}
