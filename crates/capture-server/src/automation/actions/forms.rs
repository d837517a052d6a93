//! Keys, text and form controls: type, fill, clear, press a key, select, check, upload
//! files, focus and blur. Keys go through `Input.dispatchKeyEvent`; each tool checks the
//! effect it promises.

use base64::Engine as _;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{after, show, touch_device};
use crate::automation::sessions::live;
use crate::automation::{required_element, timeout};
use crate::error::{Error, Result};
use crate::tool::{Cx, Reply, invalid, refused};
use capture_browser::session::{FileUpload, MAX_UPLOAD_BYTES};
use capture_core::{ErrorCode, ScreenshotId};

/// Type text key by key (real keyDown/char/keyUp events, so input handlers and autocompletes react) into the focused field, or first tap (click on desktop) the element given by ref or selector to focus it. Appends to what the field holds; use fill to replace. submit: press Enter afterwards.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TypeIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// The text to type.
    #[schemars(length(max = 10_000))]
    pub text: String,
    /// Focus this element first (ref from snapshot or find).
    #[serde(rename = "ref")]
    pub element_ref: Option<String>,
    /// Focus the element matching this CSS selector first.
    pub selector: Option<String>,
    /// Press Enter after typing.
    pub submit: Option<bool>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn type_text(cx: &Cx<'_>, a: TypeIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.text.len() > 10_000 {
        return Err(invalid("text", "must be at most 10000 characters"));
    }
    let target = crate::automation::element(a.element_ref.as_deref(), a.selector.as_deref())?;
    let l = live(cx, &a.session_id).await?;
    let n = a.text.chars().count();
    let done = match target {
        // The tap or click must land on the field and the field must take the text: each
        // is checked, and the tool fails when either did not happen.
        Some(target) => {
            l.session.type_into(target.clone(), &a.text, touch_device(&l), t).await?;
            format!("typed {n} characters into {}", show(&target))
        }
        None => {
            l.session.type_text(&a.text, t).await?;
            format!("typed {n} characters")
        }
    };
    if a.submit.unwrap_or(false) {
        l.session.press("Enter", t).await?;
    }
    after(&l, done).await
}

/// Replace a field's content with value: focus it, select what it holds, type value key by key (input and change events fire). For text inputs and textareas; use select_option for selects and check for checkboxes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FillIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// The field's ref from snapshot or find.
    #[serde(rename = "ref")]
    pub element_ref: Option<String>,
    /// A CSS selector, instead of ref.
    pub selector: Option<String>,
    /// The new content.
    #[schemars(length(max = 10_000))]
    pub value: String,
    /// Press Enter afterwards.
    pub submit: Option<bool>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn fill(cx: &Cx<'_>, a: FillIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.value.len() > 10_000 {
        return Err(invalid("value", "must be at most 10000 characters"));
    }
    let target = required_element(a.element_ref.as_deref(), a.selector.as_deref())?;
    let l = live(cx, &a.session_id).await?;
    let now = l.session.fill(target.clone(), &a.value, t).await?;
    if a.submit.unwrap_or(false) {
        l.session.press("Enter", t).await?;
    }
    // The page may reformat what was typed (a phone number, a card number): say so.
    let what = if now == a.value {
        format!("filled {}", show(&target))
    } else {
        format!("filled {} (the page made it {now:?})", show(&target))
    };
    after(&l, what).await
}

element_input! {
    /// Empty a text field or textarea (ref or selector), with input and change events.
    ClearIn
}

pub async fn clear(cx: &Cx<'_>, a: ClearIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let target = required_element(a.element_ref.as_deref(), a.selector.as_deref())?;
    let l = live(cx, &a.session_id).await?;
    l.session.fill(target.clone(), "", t).await?;
    after(&l, format!("cleared {}", show(&target))).await
}

/// Press a key or chord on the focused element: Enter, Tab, Escape, Backspace, ArrowDown, PageDown, a single character, or modifiers joined with + (Control+a, Shift+Tab). Waits for a navigation it starts.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeyIn {
    /// The key, e.g. Enter or Control+a.
    #[schemars(length(min = 1, max = 64))]
    pub key: String,
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn press_key(cx: &Cx<'_>, a: KeyIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.key.is_empty() || a.key.len() > 64 {
        return Err(invalid("key", "must be a key name of 1 to 64 characters"));
    }
    let l = live(cx, &a.session_id).await?;
    l.session.press(&a.key, t).await?;
    after(&l, format!("pressed {}", a.key)).await
}

/// Choose options of a select element (ref or selector) by value or visible label; several for a multiple select. Returns the values now selected.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SelectIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// The select's ref from snapshot or find.
    #[serde(rename = "ref")]
    pub element_ref: Option<String>,
    /// A CSS selector, instead of ref.
    pub selector: Option<String>,
    /// Values or labels to select.
    #[schemars(length(min = 1, max = 100))]
    pub values: Vec<String>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn select_option(cx: &Cx<'_>, a: SelectIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    if a.values.is_empty() || a.values.len() > 100 {
        return Err(invalid("values", "give 1 to 100 values"));
    }
    let target = required_element(a.element_ref.as_deref(), a.selector.as_deref())?;
    let l = live(cx, &a.session_id).await?;
    let chosen = l.session.select_option(target, a.values.clone(), t).await?;
    if chosen.is_empty() {
        return Err(refused(ErrorCode::ActionFailed, format!("no option has the value or label {:?}", a.values)));
    }
    let text = format!("selected {}", chosen.join(", "));
    Ok(Reply::data(json!({"selected": chosen})).with_text(text))
}

/// Check (or, with checked false, uncheck) a checkbox or radio button (ref or selector) by tapping/clicking it when its state must change. Returns the state it ends in.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CheckIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// The control's ref from snapshot or find.
    #[serde(rename = "ref")]
    pub element_ref: Option<String>,
    /// A CSS selector, instead of ref.
    pub selector: Option<String>,
    /// The state wanted (default true).
    pub checked: Option<bool>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn check(cx: &Cx<'_>, a: CheckIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let target = required_element(a.element_ref.as_deref(), a.selector.as_deref())?;
    let want = a.checked.unwrap_or(true);
    let l = live(cx, &a.session_id).await?;
    l.session.set_checked(target.clone(), want, t).await?;
    let now =
        crate::automation::look::on_element(&l.session, &target, "function() { return !!this.checked; }", vec![], t)
            .await?;
    if now != json!(want) {
        return Err(refused(
            ErrorCode::ActionFailed,
            format!("{} is still {}", show(&target), if want { "unchecked" } else { "checked" }),
        ));
    }
    Ok(Reply::data(json!({"checked": want})).with_text(format!(
        "{} is {}",
        show(&target),
        if want { "checked" } else { "unchecked" }
    )))
}

/// A file given inline.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InlineFile {
    /// File name, e.g. avatar.png.
    #[schemars(length(min = 1, max = 255))]
    pub name: String,
    /// MIME type (default application/octet-stream).
    pub mime_type: Option<String>,
    /// The content, base64.
    pub content_base64: String,
}

/// An attachment of a message in this account's saved test inbox.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InboxAttachmentIn {
    /// The message (eml_…) from inbox_messages or inbox_wait.
    pub message_id: String,
    /// The attachment's index in the message's attachments (from 0).
    pub index: u32,
}

/// Give files to a file input (ref or selector), as if chosen in the phone's picker: a screenshot of this account (screenshotId, its image), an attachment of a message in this account's inbox (inboxAttachment) and/or files given inline (base64). At most 16 MB together. The input's change event fires.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UploadIn {
    /// The session (run_…) from session_start.
    pub session_id: String,
    /// The file input's ref from snapshot or find.
    #[serde(rename = "ref")]
    pub element_ref: Option<String>,
    /// A CSS selector, instead of ref (e.g. input[type=file]).
    pub selector: Option<String>,
    /// A finished screenshot of this account (scr_…): its image is the file.
    pub screenshot_id: Option<String>,
    /// An attachment of a message in this account's inbox: the file keeps its name and bytes.
    pub inbox_attachment: Option<InboxAttachmentIn>,
    /// Files given inline.
    #[schemars(length(max = 10))]
    pub files: Option<Vec<InlineFile>>,
    /// Most time for this tool in ms (default 10000, 100–60000).
    pub timeout_ms: Option<u64>,
}

pub async fn upload_file(cx: &Cx<'_>, a: UploadIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let target = required_element(a.element_ref.as_deref(), a.selector.as_deref())?;
    let mut files = Vec::new();
    if let Some(id) = &a.screenshot_id {
        let sid = ScreenshotId::parse(id.trim()).ok_or_else(|| Error::not_found(ScreenshotId::NOUN))?;
        let row = crate::screenshots::service::find(cx.state, cx.account, &sid).await?;
        let key = row.result_key.clone().filter(|_| row.status == capture_core::JobStatus::Done).ok_or_else(|| {
            invalid("screenshotId", format!("screenshot {id} is {}, not done: it has no image yet", row.status))
        })?;
        let bytes = cx
            .state
            .blobs
            .get(&key)
            .await
            .map_err(Error::internal)?
            .ok_or_else(|| invalid("screenshotId", format!("the image of screenshot {id} is no longer stored")))?;
        let ext = key.rsplit('.').next().unwrap_or("png").to_string();
        files.push(FileUpload {
            name: format!("{}.{ext}", row.id),
            mime_type: crate::blob::content_type(&key).into(),
            bytes,
        });
    }
    if let Some(att) = &a.inbox_attachment {
        let (info, bytes) =
            crate::inbox::service::attachment(cx.state, cx.account, att.message_id.trim(), &att.index.to_string())
                .await?;
        let name = info
            .name
            .as_deref()
            .map(|n| n.rsplit(['/', '\\']).next().unwrap_or(n).trim())
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| format!("attachment-{}", info.index));
        files.push(FileUpload { name, mime_type: info.content_type, bytes });
    }
    for (i, f) in a.files.iter().flatten().enumerate() {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(f.content_base64.trim())
            .map_err(|_| invalid(&format!("files[{i}].contentBase64"), "is not valid base64"))?;
        if f.name.is_empty() || f.name.len() > 255 || f.name.contains(['/', '\\']) {
            return Err(invalid(&format!("files[{i}].name"), "must be a file name of 1 to 255 characters"));
        }
        let mime = f.mime_type.clone().unwrap_or_else(|| "application/octet-stream".into());
        files.push(FileUpload { name: f.name.clone(), mime_type: mime, bytes });
    }
    if files.is_empty() {
        return Err(invalid("files", "give screenshotId, inboxAttachment or files"));
    }
    if files.len() > 10 {
        return Err(invalid("files", "at most 10 files"));
    }
    let total: usize = files.iter().map(|f| f.bytes.len()).sum();
    if total > MAX_UPLOAD_BYTES {
        return Err(invalid("files", format!("{total} bytes together; at most {MAX_UPLOAD_BYTES}")));
    }
    let names: Vec<String> = files.iter().map(|f| f.name.clone()).collect();
    let l = live(cx, &a.session_id).await?;
    l.session.set_input_files(target.clone(), files, t).await?;
    let text = format!("gave {} to {}", names.join(", "), show(&target));
    Ok(Reply::data(json!({"files": names, "bytes": total})).with_text(text))
}

element_input! {
    /// Give an element (ref or selector) the keyboard focus without tapping it (focus handlers run); type and press_key then go to it.
    FocusIn
}

pub async fn focus(cx: &Cx<'_>, a: FocusIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let target = required_element(a.element_ref.as_deref(), a.selector.as_deref())?;
    let l = live(cx, &a.session_id).await?;
    let ok = crate::automation::look::on_element(
        &l.session,
        &target,
        "function() { this.focus(); return document.activeElement === this; }",
        vec![],
        t,
    )
    .await?;
    if ok != json!(true) {
        return Err(refused(ErrorCode::ActionFailed, format!("{} cannot take the focus", show(&target))));
    }
    after(&l, format!("focused {}", show(&target))).await
}

page_input! {
    /// Take the focus away from the focused element (blur handlers and validation run; on a phone the on-screen keyboard would close).
    BlurIn
}

pub async fn blur(cx: &Cx<'_>, a: BlurIn) -> Result<Reply> {
    let t = timeout(a.timeout_ms)?;
    let l = live(cx, &a.session_id).await?;
    let was = l
        .session
        .evaluate(
            "(() => { const e = document.activeElement; const d = e && e !== document.body ? (e.id || e.localName) : null; \
             if (e && e.blur) e.blur(); return d; })()",
            false,
            t,
        )
        .await?;
    Ok(Reply::data(json!({"blurred": was})))
}
