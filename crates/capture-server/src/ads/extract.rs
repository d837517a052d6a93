//! What an ad needs from a page, and the copy written from it: the script run in the page
//! (it reports through `document.title`, which the capture returns), the facts it reports,
//! colour parsing, and the pure steps that turn facts into a name, headline, supporting
//! lines, call to action, brand colour and a voice-over script that fits 15–30 s.

use capture_media::Rgb;
use serde::Deserialize;

/// The marker before the JSON the page script leaves in `document.title`.
pub const MARKER: &str = "__capture_ad__";

/// Run in the page before the capture: gathers the copy, the colours, the icon and logo,
/// and leaves them as JSON in `document.title` (read back as the capture's page title).
pub const PAGE_SCRIPT: &str = r#"(() => {
  const clean = s => String(s || '').replace(/\s+/g, ' ').trim();
  const meta = n => {
    const m = document.querySelector(`meta[name="${n}" i],meta[property="${n}" i]`);
    return m ? clean(m.getAttribute('content')) : '';
  };
  const visible = e => !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length);
  const texts = (sel, max) => Array.from(document.querySelectorAll(sel)).filter(visible)
    .map(e => clean(e.innerText || e.textContent)).filter(t => t.length > 0).slice(0, max);
  const cls = e => ((typeof e.className === 'string' ? e.className : '') + ' ' + (e.id || '')).toLowerCase();
  let cta = '', ctaBg = '', ctaFg = '';
  const candidates = Array.from(document.querySelectorAll('a, button, input[type=submit]')).filter(visible);
  const score = e => (/cta|primary/.test(cls(e)) ? 3 : 0) + (/btn|button/.test(cls(e)) || e.tagName !== 'A' ? 2 : 0);
  const ranked = candidates.map((e, i) => [score(e), -i, e]).filter(x => x[0] > 0).sort((a, b) => b[0] - a[0] || b[1] - a[1]);
  for (const [, , e] of ranked) {
    const t = clean(e.innerText || e.value);
    if (t.length < 2 || t.length > 32) continue;
    cta = t;
    const cs = getComputedStyle(e);
    ctaBg = cs.backgroundColor; ctaFg = cs.color;
    break;
  }
  const root = getComputedStyle(document.documentElement);
  const vars = ['--brand', '--brand-color', '--primary', '--color-primary', '--primary-color', '--accent', '--theme-color']
    .map(v => clean(root.getPropertyValue(v))).filter(Boolean);
  const colorOf = sel => { const e = document.querySelector(sel); return e && visible(e) ? getComputedStyle(e).color : ''; };
  const bgOf = sel => { const e = document.querySelector(sel); return e && visible(e) ? getComputedStyle(e).backgroundColor : ''; };
  const css = [ctaBg, ...vars, bgOf('header'), bgOf('nav'), colorOf('h1'), colorOf('a'), ctaFg].filter(Boolean);
  const link = document.querySelector('link[rel~="apple-touch-icon" i]') || document.querySelector('link[rel~="icon" i]');
  const img = Array.from(document.querySelectorAll('img')).find(i => visible(i) &&
    /logo/i.test((i.alt || '') + ' ' + (i.getAttribute('src') || '') + ' ' + cls(i)));
  const facts = {
    title: document.title, siteName: meta('og:site_name') || meta('application-name'),
    ogTitle: meta('og:title'), description: meta('description') || meta('og:description'),
    h1: texts('h1', 1)[0] || '', h2: texts('h2', 6),
    paragraphs: texts('p', 20).filter(t => t.length >= 20 && t.length <= 240),
    cta, themeColor: meta('theme-color'), cssColors: css,
    icon: link ? link.href : '', logo: img ? img.currentSrc || img.src : '',
    lang: document.documentElement.lang || ''
  };
  document.title = '__capture_ad__' + JSON.stringify(facts).slice(0, 60000);
})()"#;

/// What the page script reports.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct PageFacts {
    pub title: String,
    pub site_name: String,
    pub og_title: String,
    pub description: String,
    pub h1: String,
    pub h2: Vec<String>,
    pub paragraphs: Vec<String>,
    pub cta: String,
    pub theme_color: String,
    pub css_colors: Vec<String>,
    pub icon: String,
    pub logo: String,
    pub lang: String,
}

impl PageFacts {
    /// The facts in a capture's page title (None when the script did not run or the page
    /// replaced the title afterwards).
    pub fn from_title(title: &str) -> Option<PageFacts> {
        serde_json::from_str(title.strip_prefix(MARKER)?).ok()
    }
}

/// A CSS colour as computed or written: `#rgb`, `#rrggbb`, `rgb()`/`rgba()` (transparent
/// ones are None) or a few common names.
pub fn parse_css_color(s: &str) -> Option<Rgb> {
    let s = s.trim().to_ascii_lowercase();
    if let Some(hex) = s.strip_prefix('#') {
        let hex: String = match hex.len() {
            3 | 4 => hex.chars().take(3).flat_map(|c| [c, c]).collect(),
            6 | 8 => hex[..6].to_string(),
            _ => return None,
        };
        return Rgb::parse_hex(&format!("#{hex}")).ok();
    }
    if let Some(inner) = s.strip_prefix("rgba(").or_else(|| s.strip_prefix("rgb(")).and_then(|r| r.strip_suffix(')')) {
        let parts: Vec<&str> = inner.split([',', ' ', '/']).filter(|p| !p.is_empty()).collect();
        if parts.len() < 3 {
            return None;
        }
        let ch = |p: &str| p.trim().parse::<f64>().ok().map(|v| v.round().clamp(0.0, 255.0) as u8);
        if let Some(a) = parts.get(3) {
            let a = a.trim();
            let alpha = match a.strip_suffix('%') {
                Some(p) => p.parse::<f64>().ok()? / 100.0,
                None => a.parse::<f64>().ok()?,
            };
            if alpha < 0.5 {
                return None;
            }
        }
        return Some(Rgb::new(ch(parts[0])?, ch(parts[1])?, ch(parts[2])?));
    }
    match s.as_str() {
        "red" => Some(Rgb::new(255, 0, 0)),
        "green" => Some(Rgb::new(0, 128, 0)),
        "blue" => Some(Rgb::new(0, 0, 255)),
        "orange" => Some(Rgb::new(255, 165, 0)),
        "purple" => Some(Rgb::new(128, 0, 128)),
        "teal" => Some(Rgb::new(0, 128, 128)),
        "navy" => Some(Rgb::new(0, 0, 128)),
        _ => None,
    }
}

/// Whether a colour can carry a brand: not grey, nor almost white or black.
pub fn is_brandlike(c: Rgb) -> bool {
    let l = c.relative_luminance();
    c.saturation() >= 0.25 && (0.02..=0.85).contains(&l)
}

/// The brand colour from the page's facts: `theme-color`, else the first brand-like CSS
/// colour (call to action, custom properties, header, headline, links). With the source.
pub fn brand_color_from_facts(f: &PageFacts) -> Option<(Rgb, &'static str)> {
    if let Some(c) = parse_css_color(&f.theme_color).filter(|c| is_brandlike(*c)) {
        return Some((c, "theme-color"));
    }
    f.css_colors.iter().filter_map(|s| parse_css_color(s)).find(|c| is_brandlike(*c)).map(|c| (c, "css"))
}

/// The ad's copy.
#[derive(Debug, Clone, PartialEq)]
pub struct Copy {
    pub name: String,
    pub headline: String,
    pub lines: Vec<String>,
    pub cta: String,
}

/// `s` cut to at most `max` characters at a word boundary (with an ellipsis when cut).
pub fn clip(s: &str, max: usize) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() <= max {
        return s;
    }
    // The first sentence, when it fits.
    if let Some(end) = s.find(['.', '!', '?']).filter(|&e| e < max && e >= 20) {
        return s[..=end].to_string();
    }
    let mut out = String::new();
    for w in s.split(' ') {
        if out.chars().count() + w.chars().count() + 2 > max {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out.trim_end_matches([',', ';', ':', '-']).to_string() + "…"
}

/// The site's host without `www.`.
pub fn host_of(url: &str) -> String {
    url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(|h| h.trim_start_matches("www.").to_string()))
        .unwrap_or_default()
}

fn name_from_host(host: &str) -> String {
    let label = host.split('.').next().unwrap_or(host);
    let mut c = label.chars();
    match c.next() {
        Some(f) if !label.chars().all(|ch| ch.is_ascii_digit() || ch == ':') => f.to_uppercase().chain(c).collect(),
        _ => host.to_string(),
    }
}

/// Name, headline, supporting lines and call to action from the facts (None: no page, as
/// for a draft of screenshots only; the host is then all there is).
pub fn write_copy(facts: Option<&PageFacts>, host: &str) -> Copy {
    let f = facts.cloned().unwrap_or_default();
    let mut title_parts: Vec<String> = vec![f.title.replace('\u{a0}', " ").trim().to_string()];
    for sep in [" | ", " - ", " — ", " – ", " · "] {
        title_parts = title_parts
            .iter()
            .flat_map(|p| p.split(sep).map(|s| s.trim().to_string()))
            .filter(|s| !s.is_empty())
            .collect();
    }
    let name = if !f.site_name.is_empty() {
        clip(&f.site_name, 40)
    } else if title_parts.len() > 1 {
        clip(title_parts.last().map(String::as_str).unwrap_or_default(), 40)
    } else if let Some(t) = title_parts.first().filter(|t| t.chars().count() <= 30) {
        t.clone()
    } else {
        name_from_host(host)
    };
    let headline = [&f.h1, &f.og_title, &f.title]
        .into_iter()
        .find(|s| !s.trim().is_empty())
        .map(|s| clip(s, 90))
        .unwrap_or_else(|| format!("Discover {name}"));
    let mut lines: Vec<String> = Vec::new();
    let candidates = std::iter::once(&f.description).chain(f.h2.iter()).chain(f.paragraphs.iter());
    for c in candidates {
        let line = clip(c, 110);
        let key = line.to_lowercase();
        if line.chars().count() < 8
            || key == headline.to_lowercase()
            || lines.iter().any(|l| l.to_lowercase() == key)
            || key.contains("cookie")
        {
            continue;
        }
        lines.push(line);
        if lines.len() == 3 {
            break;
        }
    }
    let cta = if f.cta.trim().is_empty() { format!("Visit {host}") } else { clip(&f.cta, 32) };
    Copy { name, headline, lines, cta }
}

/// Words per second the voices speak at (about 165 words a minute).
pub const WORDS_PER_SECOND: f64 = 2.75;
/// Most words a script is written with: about 24 s of speech, leaving room in 30 s.
pub const MAX_SCRIPT_WORDS: usize = 64;

fn sentence(s: &str) -> String {
    let s = s.trim().trim_end_matches('…').trim();
    if s.ends_with(['.', '!', '?']) { s.to_string() } else { format!("{s}.") }
}

fn words(s: &str) -> usize {
    s.split_whitespace().count()
}

/// The voice-over: the name (when the headline does not say it), the headline, as many
/// supporting lines as fit in [`MAX_SCRIPT_WORDS`], and the call to action.
pub fn write_script(copy: &Copy, host: &str) -> String {
    let mut parts = Vec::new();
    if !copy.headline.to_lowercase().contains(&copy.name.to_lowercase()) {
        parts.push(sentence(&copy.name));
    }
    parts.push(sentence(&copy.headline));
    let closing = if copy.cta.to_lowercase().contains(host) || host.is_empty() {
        sentence(&copy.cta)
    } else {
        format!("{} {}", sentence(&copy.cta), sentence(&format!("Visit {host}")))
    };
    let mut used = parts.iter().map(|p| words(p)).sum::<usize>() + words(&closing);
    for l in &copy.lines {
        let l = sentence(l);
        if used + words(&l) > MAX_SCRIPT_WORDS {
            continue;
        }
        used += words(&l);
        parts.push(l);
    }
    parts.push(closing);
    let script = parts.join(" ");
    // The headline alone may be long: cut at the word budget.
    let all: Vec<&str> = script.split_whitespace().collect();
    if all.len() > MAX_SCRIPT_WORDS + 6 { sentence(&all[..MAX_SCRIPT_WORDS].join(" ")) } else { script }
}

/// The ad's expected length with `script`, in milliseconds (15–30 s).
pub fn estimated_duration_ms(script: &str) -> i64 {
    let voice = words(script) as f64 / WORDS_PER_SECOND;
    let total = (capture_media::ad::VOICE_LEAD_IN + voice + capture_media::ad::VOICE_TAIL)
        .clamp(capture_media::ad::MIN_SECONDS, capture_media::ad::MAX_SECONDS);
    (total * 1000.0).round() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn css_colours_parse() {
        assert_eq!(parse_css_color("#0a7"), Some(Rgb::new(0x00, 0xaa, 0x77)));
        assert_eq!(parse_css_color("#E4572E"), Some(Rgb::new(0xe4, 0x57, 0x2e)));
        assert_eq!(parse_css_color("rgb(228, 87, 46)"), Some(Rgb::new(228, 87, 46)));
        assert_eq!(parse_css_color("rgba(0, 0, 0, 0)"), None);
        assert_eq!(parse_css_color("rgb(10 20 30 / 80%)"), Some(Rgb::new(10, 20, 30)));
        assert_eq!(parse_css_color("nonsense"), None);
        assert!(!is_brandlike(Rgb::WHITE));
        assert!(!is_brandlike(Rgb::new(0x33, 0x33, 0x33)));
        assert!(is_brandlike(Rgb::new(0xe4, 0x57, 0x2e)));
    }

    #[test]
    fn the_facts_give_copy_colour_and_a_script_that_fits() {
        let f = PageFacts {
            title: "Fresh sourdough every morning | Crumb & Co".into(),
            description: "Handmade bread from a small bakery in Leeds, baked before sunrise.".into(),
            h1: "Fresh sourdough every morning".into(),
            h2: vec!["Order by 8pm, collect at 7am".into(), "Fresh sourdough every morning".into()],
            paragraphs: vec!["We use flour from a mill twenty miles away and nothing else but water and salt.".into()],
            cta: "Order now".into(),
            theme_color: "#ffffff".into(),
            css_colors: vec!["rgba(0, 0, 0, 0)".into(), "rgb(228, 87, 46)".into()],
            ..Default::default()
        };
        assert_eq!(brand_color_from_facts(&f), Some((Rgb::new(228, 87, 46), "css")));
        let copy = write_copy(Some(&f), "crumb.example");
        assert_eq!(copy.name, "Crumb & Co");
        assert_eq!(copy.headline, "Fresh sourdough every morning");
        assert_eq!(copy.lines.len(), 3, "{copy:?}");
        assert_eq!(copy.cta, "Order now");
        let script = write_script(&copy, "crumb.example");
        assert!(script.starts_with("Crumb & Co. Fresh sourdough every morning."), "{script}");
        assert!(script.ends_with("Order now. Visit crumb.example."), "{script}");
        let ms = estimated_duration_ms(&script);
        assert!((15_000..=30_000).contains(&ms), "{ms}");
        let themed = PageFacts { theme_color: "#1a73e8".into(), ..f };
        assert_eq!(brand_color_from_facts(&themed), Some((Rgb::new(0x1a, 0x73, 0xe8), "theme-color")));
    }

    #[test]
    fn long_copy_is_cut_to_the_word_budget() {
        let long = "word ".repeat(200);
        let copy = Copy { name: "X".into(), headline: clip(&long, 90), lines: vec![long.clone(); 3], cta: "Go".into() };
        let script = write_script(&copy, "x.example");
        assert!(words(&script) <= MAX_SCRIPT_WORDS + 6, "{script}");
        assert!(estimated_duration_ms(&script) <= 30_000);
        assert!(clip(&long, 20).chars().count() <= 20);
        assert_eq!(write_copy(None, "shop.example").name, "Shop");
    }
}
