//! Keys by name, as `Input.dispatchKeyEvent` wants them (a US keyboard layout).

/// Modifier bits of `Input.dispatchKeyEvent`.
pub(crate) const ALT: u32 = 1;
pub(crate) const CONTROL: u32 = 2;
pub(crate) const META: u32 = 4;
pub(crate) const SHIFT: u32 = 8;

/// One key: its `key` value, `code`, Windows virtual key code and the text it types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Key {
    pub key: String,
    pub code: String,
    pub key_code: u32,
    pub text: Option<String>,
}

/// Named keys (besides single characters).
const NAMED: &[(&str, &str, u32, Option<&str>)] = &[
    ("Enter", "Enter", 13, Some("\r")),
    ("Tab", "Tab", 9, None),
    ("Backspace", "Backspace", 8, None),
    ("Delete", "Delete", 46, None),
    ("Escape", "Escape", 27, None),
    ("ArrowUp", "ArrowUp", 38, None),
    ("ArrowDown", "ArrowDown", 40, None),
    ("ArrowLeft", "ArrowLeft", 37, None),
    ("ArrowRight", "ArrowRight", 39, None),
    ("Home", "Home", 36, None),
    ("End", "End", 35, None),
    ("PageUp", "PageUp", 33, None),
    ("PageDown", "PageDown", 34, None),
    ("Insert", "Insert", 45, None),
    ("Space", "Space", 32, Some(" ")),
    ("Shift", "ShiftLeft", 16, None),
    ("Control", "ControlLeft", 17, None),
    ("Alt", "AltLeft", 18, None),
    ("Meta", "MetaLeft", 91, None),
    ("F1", "F1", 112, None),
    ("F2", "F2", 113, None),
    ("F3", "F3", 114, None),
    ("F4", "F4", 115, None),
    ("F5", "F5", 116, None),
    ("F6", "F6", 117, None),
    ("F7", "F7", 118, None),
    ("F8", "F8", 119, None),
    ("F9", "F9", 120, None),
    ("F10", "F10", 121, None),
    ("F11", "F11", 122, None),
    ("F12", "F12", 123, None),
];

/// Punctuation on a US keyboard: the character, its code, its key code, and whether it
/// needs Shift.
const PUNCT: &[(char, &str, u32)] = &[
    (' ', "Space", 32),
    ('-', "Minus", 189),
    ('=', "Equal", 187),
    ('[', "BracketLeft", 219),
    (']', "BracketRight", 221),
    ('\\', "Backslash", 220),
    (';', "Semicolon", 186),
    ('\'', "Quote", 222),
    (',', "Comma", 188),
    ('.', "Period", 190),
    ('/', "Slash", 191),
    ('`', "Backquote", 192),
];

/// A single character key, or None when it is not on a US keyboard (typed with
/// `Input.insertText` instead).
pub(crate) fn char_key(c: char) -> Option<Key> {
    let text = Some(c.to_string());
    if c.is_ascii_alphabetic() {
        let upper = c.to_ascii_uppercase();
        return Some(Key { key: c.to_string(), code: format!("Key{upper}"), key_code: upper as u32, text });
    }
    if c.is_ascii_digit() {
        return Some(Key { key: c.to_string(), code: format!("Digit{c}"), key_code: c as u32, text });
    }
    if let Some((_, code, kc)) = PUNCT.iter().find(|(p, _, _)| *p == c) {
        return Some(Key { key: c.to_string(), code: (*code).to_owned(), key_code: *kc, text });
    }
    None
}

/// A key by name (`Enter`, `ArrowDown`, `a`, `F5`…).
pub(crate) fn named(name: &str) -> Option<Key> {
    if let Some((key, code, kc, text)) = NAMED.iter().find(|(k, ..)| k.eq_ignore_ascii_case(name)) {
        return Some(Key {
            key: (*key).to_owned(),
            code: (*code).to_owned(),
            key_code: *kc,
            text: text.map(str::to_owned),
        });
    }
    let mut chars = name.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => char_key(c),
        _ => None,
    }
}

/// Parse a chord like `Control+Shift+ArrowLeft` into its modifier bits and its key.
pub(crate) fn chord(spec: &str) -> Result<(u32, Key), String> {
    let parts: Vec<&str> = if spec == "+" { vec!["+"] } else { spec.split('+').collect() };
    let (last, mods) = parts.split_last().ok_or_else(|| "an empty key".to_owned())?;
    let mut bits = 0;
    for m in mods {
        bits |= match m.to_ascii_lowercase().as_str() {
            "alt" | "option" => ALT,
            "control" | "ctrl" => CONTROL,
            "meta" | "cmd" | "command" => META,
            "shift" => SHIFT,
            other => return Err(format!("'{other}' is not a modifier (Alt, Control, Meta, Shift)")),
        };
    }
    let key = named(last).ok_or_else(|| format!("'{last}' is not a key name"))?;
    Ok((bits, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_chords() {
        assert_eq!(named("enter").unwrap().key_code, 13);
        assert_eq!(named("a").unwrap().code, "KeyA");
        assert_eq!(named("7").unwrap().code, "Digit7");
        assert_eq!(named(".").unwrap().key_code, 190);
        assert!(named("Nope").is_none());
        assert!(char_key('é').is_none());
        let (m, k) = chord("Control+Shift+ArrowLeft").unwrap();
        assert_eq!((m, k.key.as_str()), (CONTROL | SHIFT, "ArrowLeft"));
        assert!(chord("+").is_err(), "'+' is Shift+= on a US keyboard");
        assert!(chord("Hyper+a").unwrap_err().contains("not a modifier"));
        assert!(chord("Control+Nope").unwrap_err().contains("not a key name"));
    }
}
