//! The website's base, below every page (and the OAuth consent page): the layout and HTML
//! responses, sessions, and the form extractors with their CSRF checks. It imports no page.

pub mod forms;
pub mod layout;
pub mod session;
