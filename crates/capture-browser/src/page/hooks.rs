//! What a session adds to a page's event handling (logs, dialogs left open for the caller,
//! screencast frames): the page calls these as events arrive, without knowing what a
//! session is. A capture's page has none.

use crate::protocol::PageEvent;
use crate::protocol::session::{DialogOpening, ScreencastFrame};

/// A page's event hooks (see the module docs).
pub(crate) trait PageHooks: Send + std::any::Any {
    /// Every event, before the page itself looks at it.
    fn on_event(&mut self, ev: &PageEvent, main_frame: &str);
    /// A dialog opened: `Some(accept)` to answer it now, `None` to leave it open.
    fn dialog_opened(&mut self, d: &DialogOpening) -> Option<bool>;
    /// The open dialog was closed.
    fn dialog_closed(&mut self);
    /// A screencast frame (already acknowledged).
    fn frame(&mut self, f: ScreencastFrame);
    /// A dialog opened and left open during the running operation, once: `(kind, message)`.
    fn take_new_dialog(&mut self) -> Option<(String, String)>;
}
