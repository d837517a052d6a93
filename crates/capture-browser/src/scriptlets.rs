//! uBlock Origin's scriptlets (`##+js(...)` rules) as the adblock engine's resources, read from
//! Debian's uBlock Origin package (`js/resources/*.js`, GPL-3+, read where the system keeps them,
//! never copied into this repository or its binary).
//!
//! uBO 1.5x+ writes its scriptlets as ES modules: each is a top-level `function name(…) { … }`
//! registered with `registerScriptlet(fn, {name, aliases, dependencies, world, requiresTrust})`
//! or `builtinScriptlets.push({name, fn, aliases, dependencies, …})`, its dependencies named by
//! function or by resource name. adblock's own assembler reads only the older format, so they are
//! read here into resources holding each function's source: the engine then writes, for a page, the functions a
//! rule needs and the call with the rule's arguments.
//!
//! Scriptlets that require trust (`requiresTrust: true`: uBO lets only its own trusted lists use
//! them) are left out, as uBO leaves them out for other lists.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use adblock::resources::{MimeType, Resource, ResourceType};
use base64::Engine as _;

/// Where Debian's uBlock Origin package keeps its scriptlets.
pub const DEBIAN_RESOURCES_DIR: &str = "/usr/share/chromium/extensions/ublock-origin/js/resources";

/// The folder the scriptlets are read from: `CAPTURE_SCRIPTLETS_DIR`, else Debian's.
pub fn resources_dir() -> PathBuf {
    std::env::var_os("CAPTURE_SCRIPTLETS_DIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from(DEBIAN_RESOURCES_DIR), PathBuf::from)
}

/// One registration, as written in the source.
#[derive(Debug, Default)]
struct Registration {
    name: String,
    function: String,
    aliases: Vec<String>,
    /// Function names or resource names.
    dependencies: Vec<String>,
    trusted: bool,
}

/// Top-level functions and classes of a module: name → source from `function` (or `class`) to
/// its closing `}` line.
fn functions(src: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let lines: Vec<&str> = src.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let def = line.strip_prefix("export ").unwrap_or(line);
        if let Some(rest) = def.strip_prefix("function ").or_else(|| def.strip_prefix("class ")) {
            let name = identifier(rest);
            if let Some(end) = (i..lines.len()).find(|&j| lines[j] == "}") {
                if !name.is_empty() {
                    let mut body = String::from(def);
                    for l in &lines[i + 1..=end] {
                        body.push('\n');
                        body.push_str(l);
                    }
                    out.insert(name, body);
                }
                i = end + 1;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// The object literal starting at `from` (its `{`): up to its matching `}` (the registrations
/// hold only names, strings, arrays and booleans).
fn object_at(src: &str, from: usize) -> Option<&str> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    for (k, c) in src[from..].char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"' | '`') => quote = Some(c),
            (None, '{') => depth += 1,
            (None, '}') => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(&src[from..from + k + 1]);
                }
            }
            _ => {}
        }
    }
    None
}

/// The strings or identifiers of `key: [ … ]` in an object literal.
fn list_of(obj: &str, key: &str) -> Vec<String> {
    let Some(at) = obj.find(&format!("{key}:")) else { return Vec::new() };
    let rest = &obj[at + key.len() + 1..];
    let (Some(open), Some(close)) = (rest.find('['), rest.find(']')) else { return Vec::new() };
    if open > close {
        return Vec::new();
    }
    rest[open + 1..close]
        .split(',')
        .map(|s| s.trim().trim_matches(|c| c == '\'' || c == '"').to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The string of `key: '…'` in an object literal.
fn string_of(obj: &str, key: &str) -> Option<String> {
    let at = obj.find(&format!("{key}:"))?;
    let rest = obj[at + key.len() + 1..].trim_start();
    let q = rest.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let end = rest[1..].find(q)?;
    Some(rest[1..1 + end].to_string())
}

/// The JavaScript identifier `s` starts with (after blanks).
fn identifier(s: &str) -> String {
    s.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$').collect()
}

/// A registration's details from its object literal, for the function it registers.
fn registration(obj: &str, function: String) -> Registration {
    Registration {
        name: string_of(obj, "name").unwrap_or_default(),
        function,
        aliases: list_of(obj, "aliases"),
        dependencies: list_of(obj, "dependencies"),
        trusted: obj.contains("requiresTrust: true"),
    }
}

/// `registerScriptlet(fn, {…})` and `builtinScriptlets.push({fn, …})`.
fn registrations(src: &str) -> Vec<Registration> {
    let mut out = Vec::new();
    for (at, _) in src.match_indices("registerScriptlet(") {
        let rest = &src[at + "registerScriptlet(".len()..];
        let function = identifier(rest);
        let Some(obj) = rest.find('{').and_then(|open| object_at(rest, open)) else { continue };
        if !function.is_empty() {
            out.push(registration(obj, function));
        }
    }
    for (at, _) in src.match_indices("builtinScriptlets.push(") {
        let rest = &src[at + "builtinScriptlets.push(".len()..];
        let Some(obj) = rest.find('{').and_then(|open| object_at(rest, open)) else { continue };
        let function = obj.find("fn:").map(|k| identifier(&obj[k + 3..])).unwrap_or_default();
        out.push(registration(obj, function));
    }
    out
}

/// Every scriptlet of the `*.js` modules in `dir`, as resources (none when the folder is
/// missing: `blockAds` then runs without scriptlets, and `/readyz` says so).
pub fn load(dir: &Path) -> Vec<Resource> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut sources = Vec::new();
    for e in entries.flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "js")
            && let Ok(s) = std::fs::read_to_string(&p)
        {
            sources.push(s);
        }
    }
    // Code the scriptlets take from uBO's main code base (`from '../jsonpath.js'`).
    let mut shared = std::collections::BTreeSet::new();
    for s in &sources {
        for (at, _) in s.match_indices("from '../") {
            let rest = &s[at + "from '../".len()..];
            if let Some(end) = rest.find('\'')
                && rest[..end].ends_with(".js")
                && !rest[..end].contains('/')
            {
                shared.insert(rest[..end].to_string());
            }
        }
    }
    for f in shared {
        if let Some(Ok(s)) = dir.parent().map(|p| std::fs::read_to_string(p.join(&f))) {
            sources.push(s);
        }
    }
    let mut fns: HashMap<String, String> = HashMap::new();
    let mut regs = Vec::new();
    for s in &sources {
        fns.extend(functions(s));
        regs.extend(registrations(s));
    }
    // A dependency named by its function is the resource that function is registered as.
    let by_function: HashMap<&str, &str> =
        regs.iter().filter(|r| !r.name.is_empty()).map(|r| (r.function.as_str(), r.name.as_str())).collect();
    let trusted: std::collections::HashSet<&str> = regs.iter().filter(|r| r.trusted).map(|r| r.name.as_str()).collect();
    let mut out = Vec::new();
    for r in &regs {
        if r.name.is_empty() || r.trusted {
            continue;
        }
        let Some(body) = fns.get(&r.function) else { continue };
        let dependencies: Vec<String> = r
            .dependencies
            .iter()
            .map(|d| by_function.get(d.as_str()).map_or_else(|| d.clone(), |n| (*n).to_string()))
            .collect();
        if dependencies.iter().any(|d| trusted.contains(d.as_str())) {
            continue;
        }
        out.push(Resource {
            name: r.name.clone(),
            aliases: r.aliases.clone(),
            // `application/javascript`: adblock 0.13 injects only that (and templates); a body
            // that starts with `function name(` is called with the rule's arguments.
            kind: ResourceType::Mime(MimeType::ApplicationJavascript),
            content: base64::engine::general_purpose::STANDARD.encode(body),
            dependencies,
            permission: Default::default(),
        });
    }
    out
}

/// The script to add to a page for its scriptlets (adblock's `injected_script`), in a scope of
/// its own with the globals uBO's scriptlets expect.
pub fn wrap(injected: &str) -> Option<String> {
    (!injected.trim().is_empty())
        .then(|| format!("(() => {{\nconst scriptletGlobals = {{}};\ntry {{\n{injected}\n}} catch (e) {{ }}\n}})();"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debians_scriptlets_become_resources_the_engine_injects() {
        let dir = Path::new(DEBIAN_RESOURCES_DIR);
        if !dir.is_dir() {
            assert!(std::env::var("CI").is_err(), "uBlock Origin's scriptlets are missing under CI");
            return;
        }
        let res = load(dir);
        let names: Vec<&str> = res.iter().map(|r| r.name.as_str()).collect();
        for want in [
            "set-constant.js",
            "abort-on-property-read.js",
            "abort-current-script.js",
            "remove-attr.js",
            "safe-self.fn",
        ] {
            assert!(names.contains(&want), "{want} missing from {} resources", names.len());
        }
        // 91 in Debian 12's uBlock Origin 1.67 (its trusted ones left out).
        assert!(res.len() >= 80, "{}", res.len());
        let set = res.iter().find(|r| r.name == "set-constant.js").unwrap();
        assert_eq!(
            (set.aliases.clone(), set.dependencies.clone()),
            (vec!["set.js".to_string()], vec!["set-constant.fn".to_string()])
        );
        // No trusted scriptlet is offered.
        assert!(!names.iter().any(|n| n.starts_with("trusted-")), "{names:?}");
        // The engine writes the functions a rule needs and the call.
        let mut set = adblock::lists::FilterSet::new(false);
        set.add_filter_list(
            "news.example##+js(set, adsEnabled, false)\nnews.example##+js(aopr, showPopup)".into(),
            Default::default(),
        );
        let mut engine = adblock::Engine::new_with_filter_set(set);
        engine.use_resources(res);
        let script = engine.url_cosmetic_resources("https://news.example/a").injected_script;
        assert!(script.contains("setConstant(\"adsEnabled\", \"false\")"), "{script}");
        assert!(script.contains("function safeSelf()") && script.contains("function setConstantFn("), "dependencies");
        assert!(script.contains("abortOnPropertyRead(\"showPopup\")"), "{script}");
        assert!(wrap(&script).unwrap().starts_with("(() => {\nconst scriptletGlobals = {};"));
        assert_eq!(wrap("  "), None);
    }

    #[test]
    fn modules_are_read_by_their_shape() {
        let src = "import { a } from './a.js';\nexport function helperFn(x) {\n    if (x) { return '}'; }\n}\nregisterScriptlet(helperFn, {\n    name: 'helper.fn',\n});\nfunction mainThing(\n    y = ''\n) {\n    helperFn(y);\n}\nregisterScriptlet(mainThing, {\n    name: 'main-thing.js',\n    aliases: [\n        'mt.js',\n    ],\n    dependencies: [\n        helperFn,\n        'other.fn',\n    ],\n    world: 'ISOLATED',\n});\nbuiltinScriptlets.push({\n    name: 'pushed.js',\n    fn: mainThing,\n    requiresTrust: true,\n});\n";
        let f = functions(src);
        assert_eq!(f["helperFn"], "function helperFn(x) {\n    if (x) { return '}'; }\n}");
        assert!(f["mainThing"].ends_with("helperFn(y);\n}"));
        let r = registrations(src);
        assert_eq!(r.len(), 3);
        assert_eq!((r[1].name.as_str(), r[1].aliases.clone()), ("main-thing.js", vec!["mt.js".to_string()]));
        assert_eq!(r[1].dependencies, vec!["helperFn".to_string(), "other.fn".to_string()]);
        assert!(r[2].trusted && r[2].function == "mainThing");
    }
}
