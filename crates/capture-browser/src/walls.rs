//! Bot walls: challenge and block pages recognised by their vendors' own markers (the ids,
//! script objects and script hosts their pages are made of), never by the status alone — a 403
//! is often a real page, and a challenge is often a 200 or a 503.
//!
//! A capture of a wall fails with `blocked: <vendor>` and a hint, and is not charged
//! ([`crate::CaptureError::Blocked`]); an audit reports its page as blocked instead of scoring
//! a challenge. A page that only talks about captchas, or has a captcha widget on a contact form
//! among its own content, is not a wall: the widget vendors (hCaptcha, reCAPTCHA) and the
//! generic "verify you are human" wording count only on a page that is little else.

use serde::Deserialize;
use serde_json::Value;

/// Evaluated in the page: `null`, or `{vendor, kind, marker}` for the first vendor whose
/// markers the page carries.
pub const DETECT_JS: &str = r#"(() => {
  const d = document, w = window;
  const q = (s) => { try { return d.querySelector(s); } catch (e) { return null; } };
  const srcs = Array.from(d.querySelectorAll('script[src],iframe[src]')).map((e) => e.src || e.getAttribute('src') || '');
  const src = (re) => srcs.find((s) => re.test(s));
  const title = (d.title || '').trim();
  const text = ((d.body && d.body.innerText) || '').replace(/\s+/g, ' ').trim();
  // "Little else": the page's own readable text is short (a challenge's few lines).
  const bare = text.length < 1200;
  const hit = (vendor, kind, marker) => ({ vendor, kind, marker: String(marker).slice(0, 200) });
  // Cloudflare: the managed/JS challenge ("Just a moment…") and the block page (error 1020…).
  if (w._cf_chl_opt) return hit('cloudflare', 'challenge', 'window._cf_chl_opt');
  const cfChl = src(/\/cdn-cgi\/challenge-platform\//);
  if (cfChl && (bare || q('#challenge-form,#challenge-stage,#challenge-running,#challenge-body-text')))
    return hit('cloudflare', 'challenge', cfChl);
  if (q('#challenge-form') && q('#challenge-running,#challenge-stage,#cf-challenge-running'))
    return hit('cloudflare', 'challenge', '#challenge-form');
  if (q('#cf-error-details,.cf-error-details-wrapper') || (q('#cf-wrapper') && /Cloudflare Ray ID/i.test(text)))
    return hit('cloudflare', 'block', '#cf-error-details');
  // DataDome: its captcha/interstitial page (`var dd = {…host: 'geo.captcha-delivery.com'}`).
  if (w.dd && typeof w.dd === 'object' && /captcha-delivery\.com/.test(String(w.dd.host || '')))
    return hit('datadome', 'challenge', 'window.dd');
  const ddFrame = src(/(^|\/\/)([a-z0-9-]+\.)?captcha-delivery\.com\//);
  if (ddFrame && bare) return hit('datadome', 'challenge', ddFrame);
  // PerimeterX / HUMAN: the block page's "Press & Hold" captcha.
  if (q('#px-captcha')) return hit('perimeterx', 'challenge', '#px-captcha');
  const pxCaptcha = src(/(px-cdn\.net|px-cloud\.net|perimeterx\.net)\/.*captcha|\/captcha\/captcha\.js\?a=c/);
  if (pxCaptcha && (w._pxAppId || w._pxJsClientSrc || bare)) return hit('perimeterx', 'challenge', pxCaptcha);
  // Akamai: Bot Manager's challenge, and the edge's "Access Denied" with its reference.
  if (q('#sec-if-cpt-container,#sec-cpt-if')) return hit('akamai', 'challenge', '#sec-if-cpt-container');
  const akChl = src(/\/_sec\/cp_challenge\//);
  if (akChl) return hit('akamai', 'challenge', akChl);
  if (/^access denied$/i.test(title) && /errors\.edgesuite\.net|Reference #\d+\.[0-9a-f]+/i.test(text))
    return hit('akamai', 'block', 'Access Denied · errors.edgesuite.net');
  // AWS WAF: the challenge (`window.gokuProps`, challenge.js from *.awswaf.com) and its captcha.
  if (w.gokuProps && typeof w.gokuProps === 'object') return hit('aws-waf', 'challenge', 'window.gokuProps');
  const aws = src(/\.awswaf\.com\//);
  if (aws && bare) return hit('aws-waf', 'challenge', aws);
  // Imperva / Incapsula: the block page's frame, or its incident text.
  const inc = Array.from(d.querySelectorAll('iframe')).map((e) => e.getAttribute('src') || '').find((s) => /_Incapsula_Resource/.test(s));
  if (inc && bare) return hit('imperva', 'block', inc);
  if (/Incapsula incident ID/i.test(text) && bare) return hit('imperva', 'block', 'Incapsula incident ID');
  // A captcha interstitial: the widget and little else.
  const shown = (el) => { if (!el) return false; const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0 && r.top < innerHeight; };
  const widget = (sel, re) => { const el = q(sel); if (shown(el)) return sel; const f = Array.from(d.querySelectorAll('iframe')).find((e) => re.test(e.getAttribute('src') || '') && shown(e)); return f ? (f.getAttribute('src') || '') : null; };
  if (bare) {
    const h = widget('.h-captcha,[data-hcaptcha-widget-id]', /hcaptcha\.com/);
    if (h) return hit('hcaptcha', 'challenge', h);
    const g = widget('.g-recaptcha,#recaptcha', /(google\.com|recaptcha\.net)\/recaptcha\//);
    if (g) return hit('recaptcha', 'challenge', g);
    if (q('.cf-turnstile') && shown(q('.cf-turnstile'))) return hit('cloudflare', 'challenge', '.cf-turnstile');
  }
  // A generic human check: the heading or title says so, and the page is little else.
  const heading = Array.from(d.querySelectorAll('h1,h2')).slice(0, 3).map((e) => e.innerText || '').join(' | ');
  const human = /verify (that )?you('| a)re (a )?human|are you a (robot|human)|checking (if the site connection is secure|your browser)|human verification|confirm you are (a )?human|not a robot|unusual traffic from your/i;
  if (text.length < 600 && (human.test(title) || human.test(heading)))
    return hit('generic', 'challenge', (human.exec(title) || human.exec(heading) || [''])[0]);
  return null;
})()"#;

/// A wall found on the page.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Wall {
    /// `cloudflare`, `datadome`, `perimeterx`, `akamai`, `aws-waf`, `imperva`, `hcaptcha`,
    /// `recaptcha` or `generic`.
    pub vendor: String,
    /// `challenge` (a check the visitor is asked to pass) or `block` (refused outright).
    pub kind: String,
    /// What gave it away (a selector, a script object, a script's address).
    pub marker: String,
}

impl Wall {
    /// [`DETECT_JS`]'s answer.
    pub fn read(v: &Value) -> Option<Wall> {
        serde_json::from_value(v.clone()).ok()
    }

    /// A challenge may clear itself (a JS check that passes navigates to the page).
    pub fn may_clear(&self) -> bool {
        self.kind == "challenge"
    }

    /// The job's error: `blocked: <vendor>`, what the site did and what may get through.
    pub fn message(&self) -> String {
        let what = match (self.vendor.as_str(), self.kind.as_str()) {
            ("generic", _) => "the site answered with a human-verification page".to_owned(),
            ("hcaptcha" | "recaptcha", _) => {
                format!("the site answered with a {} captcha instead of the page", self.vendor)
            }
            (v, "block") => format!("the site's bot protection ({}) refused the request", vendor_name(v)),
            (v, _) => {
                format!("the site's bot protection ({}) answered with a challenge instead of the page", vendor_name(v))
            }
        };
        format!(
            "blocked: {}: {what}. A profile signed in to the site (profile), a later retry, \
             or another network may get through.",
            self.vendor
        )
    }
}

fn vendor_name(v: &str) -> &str {
    match v {
        "cloudflare" => "Cloudflare",
        "datadome" => "DataDome",
        "perimeterx" => "HUMAN/PerimeterX",
        "akamai" => "Akamai",
        "aws-waf" => "AWS WAF",
        "imperva" => "Imperva/Incapsula",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_the_vendor_first() {
        let w = Wall { vendor: "cloudflare".into(), kind: "challenge".into(), marker: "window._cf_chl_opt".into() };
        assert!(w.message().starts_with("blocked: cloudflare: the site's bot protection (Cloudflare) answered"));
        assert!(w.may_clear());
        let b = Wall::read(&serde_json::json!({"vendor": "akamai", "kind": "block", "marker": "x"})).unwrap();
        assert!(!b.may_clear());
        assert_eq!(Wall::read(&Value::Null), None);
    }
}
