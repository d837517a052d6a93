//! The page as text (see [`crate::content`]): read in an isolated world of our own.

use std::collections::BTreeMap;

use capture_core::metadata::Extracted;
use capture_core::options::{ContentSettings, ExtractRule};

use super::{Page, Stop};
use crate::CaptureError;
use crate::content::{self, ContentError, PageContent};
use crate::protocol as p;

impl Page {
    /// The loaded page as Markdown, text and HTML, as `settings` narrow it (when given), and
    /// the fields `rules` name (when given), in one call. A selector the browser cannot parse
    /// fails the job, naming its field.
    pub(crate) async fn read_text(
        &mut self,
        settings: Option<&ContentSettings>,
        rules: Option<&BTreeMap<String, ExtractRule>>,
    ) -> Result<(Option<PageContent>, Option<Extracted>), CaptureError> {
        let frame = self.frame_id.clone();
        let world =
            p::CreateIsolatedWorld { frame_id: &frame, world_name: content::WORLD, grant_univeral_access: false };
        let context = self.call(&world).await?.execution_context_id;
        let script = content::script(settings, rules);
        let cmd = p::Evaluate {
            expression: &script,
            await_promise: false,
            return_by_value: true,
            user_gesture: false,
            repl_mode: false,
            silent: true,
            object_group: None,
            context_id: Some(context),
        };
        let reply = self.send(&cmd);
        let v = match self.reply_until(reply, self.deadline).await {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => return Err(CaptureError::Script(format!("reading the page's content failed: {e}"))),
            Err(Stop::Elapsed) => return Err(self.deadline_err()),
            Err(Stop::Fail(e)) => return Err(e),
        };
        if let Some(ex) = v.exception_details {
            return Err(CaptureError::Script(format!("reading the page's content failed: {}", ex.message())));
        }
        match content::read(v.result.value.unwrap_or_default()) {
            Ok(c) => Ok(c),
            Err(ContentError::Selector(field, sel)) => {
                Err(CaptureError::Script(format!("{field}: '{sel}' is not a valid CSS selector")))
            }
            Err(ContentError::NotHtml(kind)) => Err(CaptureError::NotFound(format!(
                "the page is {}, not HTML: it has no text to read",
                if kind.is_empty() { "not a document" } else { kind.as_str() }
            ))),
            Err(ContentError::Failed(m)) => Err(CaptureError::Script(m)),
        }
    }
}
