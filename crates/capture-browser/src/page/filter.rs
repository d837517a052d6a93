//! What a capture does with the requests it intercepts (`Fetch.requestPaused`): refuse
//! the kinds `blockResources` names and what the filter lists of `blockAds`,
//! `blockTrackers` and `blockChats` name, let the rest go on; and answer the page's own
//! origin's HTTP authentication challenge with `httpAuth` (never another origin's).

use std::collections::HashMap;
use std::sync::Arc;

use capture_core::credentials::HttpAuth;

use crate::blocklists::{Blocklists, Verdict, Which};
use crate::protocol::{AuthChallengeResponse, AuthRequired, RequestPaused};

/// Requests refused, by cause; the URLs of refused frames, images and embeds (to collapse
/// what they leave), at most `URLS_MAX`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockedCounts {
    pub ads: u32,
    pub trackers: u32,
    pub chats: u32,
    pub annoyances: u32,
    pub kinds: u32,
}

const URLS_MAX: usize = 500;
/// Requests whose type is remembered at once (a page making more starts again).
const KINDS_SEEN_MAX: usize = 4096;
/// Paused requests that may wait for their Network kind at once.
const WAITING_MAX: usize = 256;
/// How long a paused request waits for its Network kind before the paused kind decides.
const WAIT_FOR_KIND: std::time::Duration = std::time::Duration::from_millis(500);
/// A page that refuses our credentials asks again; after this many answers it gets none.
const AUTH_ANSWERS_MAX: u32 = 3;

/// The interception a capture set up.
pub(crate) struct RequestFilter {
    /// `blockResources`' kinds, as DevTools names them.
    pub kinds: Vec<&'static str>,
    pub lists: Option<(Arc<Blocklists>, Which)>,
    /// `httpAuth` and the one origin it is answered to.
    pub auth: Option<(String, HttpAuth)>,
    auth_answers: u32,
    pub counts: BlockedCounts,
    pub blocked_urls: Vec<String>,
    /// The resource type the Network domain gave each request (`fetch()` is `Fetch` there,
    /// `XHR` in `Fetch.requestPaused`); its event comes first.
    kinds_seen: HashMap<String, String>,
    /// Paused requests waiting for their Network kind (see [`RequestFilter::must_wait`]).
    waiting: Vec<(RequestPaused, std::time::Instant)>,
}

impl RequestFilter {
    pub(crate) fn new(
        kinds: Vec<&'static str>,
        lists: Option<(Arc<Blocklists>, Which)>,
        auth: Option<(String, HttpAuth)>,
    ) -> RequestFilter {
        RequestFilter {
            kinds,
            lists,
            auth,
            auth_answers: 0,
            counts: BlockedCounts::default(),
            blocked_urls: Vec::new(),
            kinds_seen: HashMap::new(),
            waiting: Vec::new(),
        }
    }

    /// Remember a request's resource type as the Network domain reports it.
    pub(crate) fn note_kind(&mut self, request_id: &str, kind: &str) {
        if self.kinds_seen.len() >= KINDS_SEEN_MAX {
            self.kinds_seen.clear();
        }
        self.kinds_seen.insert(request_id.to_owned(), kind.to_owned());
    }

    /// A paused request of the kind `XHR` whose Network kind is not known yet, when that
    /// decides (`blockResources` names one of `xhr` and `fetch` but not the other): it waits
    /// for its `Network.requestWillBeSent`, which usually comes first but may not.
    pub(crate) fn must_wait(&mut self, r: &RequestPaused) -> bool {
        if self.lists.is_none() && self.auth.is_none() {
            return false;
        }
        let known = r.network_id.as_ref().is_some_and(|id| self.kinds_seen.contains_key(id));
        let undecided = self.kinds.contains(&"Fetch") != self.kinds.contains(&"XHR");
        if known || !undecided || r.resource_type != "XHR" || self.waiting.len() >= WAITING_MAX {
            return false;
        }
        self.waiting.push((r.clone(), std::time::Instant::now()));
        true
    }

    /// The paused requests that waited for their Network kind and can be decided now: the
    /// one `network_id` names, and any that waited longer than [`WAIT_FOR_KIND`] (decided by
    /// the paused kind).
    pub(crate) fn ready(&mut self, network_id: Option<&str>) -> Vec<RequestPaused> {
        if self.waiting.is_empty() {
            return Vec::new();
        }
        let now = std::time::Instant::now();
        let (ready, still): (Vec<_>, Vec<_>) = std::mem::take(&mut self.waiting).into_iter().partition(|(r, at)| {
            r.network_id.as_deref().is_some_and(|id| Some(id) == network_id) || now.duration_since(*at) > WAIT_FOR_KIND
        });
        self.waiting = still;
        ready.into_iter().map(|(r, _)| r).collect()
    }

    /// Whether to refuse a paused request; `source` is the page's URL, `main_frame` its
    /// frame (its own document always loads).
    pub(crate) fn refuses(&mut self, r: &RequestPaused, source: &str, main_frame: &str) -> bool {
        // Only the kinds' patterns pause requests: each paused one is of a refused kind.
        if self.lists.is_none() && self.auth.is_none() {
            self.counts.kinds += 1;
            return true;
        }
        let seen = r.network_id.as_ref().and_then(|id| self.kinds_seen.get(id));
        let kind = seen.map_or(r.resource_type.as_str(), String::as_str);
        if self.kinds.contains(&kind) {
            self.counts.kinds += 1;
            return true;
        }
        let Some((lists, which)) = &self.lists else { return false };
        let subframe = r.frame_id.as_deref() != Some(main_frame);
        let verdict = lists.check(*which, &r.request.url, source, kind, subframe);
        match verdict {
            None => return false,
            Some(Verdict::Ads) => self.counts.ads += 1,
            Some(Verdict::Trackers) => self.counts.trackers += 1,
            Some(Verdict::Chats) => self.counts.chats += 1,
            Some(Verdict::Annoyances) => self.counts.annoyances += 1,
        }
        if self.blocked_urls.len() < URLS_MAX && matches!(kind, "Document" | "Image" | "Media" | "Other") {
            self.blocked_urls.push(r.request.url.clone());
        }
        true
    }

    /// The answer to an authentication challenge: the credentials for the page's own
    /// origin when its server asks (a few times at most), nothing for anyone else.
    pub(crate) fn answer<'a>(&'a mut self, a: &AuthRequired) -> AuthChallengeResponse<'a> {
        let cancel = AuthChallengeResponse { response: "CancelAuth", username: None, password: None };
        let Some((origin, creds)) = &self.auth else { return cancel };
        let from_server = a.auth_challenge.source.as_deref().is_none_or(|s| s == "Server");
        if !from_server || !same_origin(&a.auth_challenge.origin, origin) || self.auth_answers >= AUTH_ANSWERS_MAX {
            return cancel;
        }
        self.auth_answers += 1;
        AuthChallengeResponse {
            response: "ProvideCredentials",
            username: Some(&creds.username),
            password: Some(&creds.password),
        }
    }
}

/// Two origins as the browser and `url` write them (`http://host:port`, the default port
/// left out either way).
fn same_origin(a: &str, b: &str) -> bool {
    let norm = |s: &str| url::Url::parse(s).map(|u| u.origin().ascii_serialization()).unwrap_or_else(|_| s.to_owned());
    norm(a) == norm(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::AuthChallenge;

    fn challenge(origin: &str, source: &str) -> AuthRequired {
        AuthRequired {
            request_id: "r1".into(),
            auth_challenge: AuthChallenge { source: Some(source.into()), origin: origin.into() },
        }
    }

    #[test]
    fn credentials_go_to_the_page_origin_only_and_not_forever() {
        let creds = HttpAuth { username: "ann".into(), password: "pw".into() };
        let mut f = RequestFilter::new(vec![], None, Some(("http://127.0.0.1:8080".into(), creds)));
        assert_eq!(f.answer(&challenge("http://localhost:8080", "Server")).response, "CancelAuth");
        assert_eq!(f.answer(&challenge("http://127.0.0.1:8080", "Proxy")).response, "CancelAuth");
        assert_eq!(f.answer(&challenge("https://127.0.0.1:8080", "Server")).response, "CancelAuth");
        for _ in 0..AUTH_ANSWERS_MAX {
            let a = f.answer(&challenge("http://127.0.0.1:8080", "Server"));
            assert_eq!((a.response, a.username, a.password), ("ProvideCredentials", Some("ann"), Some("pw")));
        }
        assert_eq!(f.answer(&challenge("http://127.0.0.1:8080", "Server")).response, "CancelAuth");
        assert!(same_origin("https://example.com", "https://example.com:443"));
    }

    fn paused(id: &str, kind: &str) -> RequestPaused {
        serde_json::from_value(serde_json::json!({"requestId": format!("f-{id}"), "networkId": id,
            "resourceType": kind, "request": {"url": format!("http://127.0.0.1/{id}")}}))
        .unwrap()
    }

    /// A `fetch()` is `XHR` when paused and `Fetch` to the Network domain, whose event may
    /// come second: a paused XHR waits for it when that decides, and is refused as a fetch.
    #[test]
    fn a_paused_xhr_waits_for_its_network_kind_when_that_decides() {
        let creds = HttpAuth { username: "ann".into(), password: "pw".into() };
        let mut f = RequestFilter::new(vec!["Fetch"], None, Some(("http://127.0.0.1".into(), creds)));
        // The Network event came first: decided at once.
        f.note_kind("a", "Fetch");
        assert!(!f.must_wait(&paused("a", "XHR")));
        assert!(f.refuses(&paused("a", "XHR"), "http://127.0.0.1/", "main"));
        // It comes second: the paused request waits, then is refused as the fetch it is.
        assert!(f.must_wait(&paused("b", "XHR")));
        assert!(f.ready(Some("other")).is_empty());
        f.note_kind("b", "Fetch");
        let ready = f.ready(Some("b"));
        assert_eq!(ready.len(), 1);
        assert!(f.refuses(&ready[0], "http://127.0.0.1/", "main"));
        // A real XHR goes on; images never wait.
        assert!(f.must_wait(&paused("c", "XHR")));
        f.note_kind("c", "XHR");
        let ready = f.ready(Some("c"));
        assert!(!f.refuses(&ready[0], "http://127.0.0.1/", "main"));
        assert!(!f.must_wait(&paused("d", "Image")));
        // When xhr and fetch are both refused (or neither), nothing waits.
        let mut both = RequestFilter::new(vec!["Fetch", "XHR"], None, None);
        assert!(!both.must_wait(&paused("e", "XHR")));
    }
}
