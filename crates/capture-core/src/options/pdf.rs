//! How a PDF is printed (`pdfOptions`): paper, margins, CSS lengths, and their check into
//! settings in inches.

use serde::{Deserialize, Serialize};

use super::bounds;
use crate::error::FieldError;

/// A paper size of `pdfOptions.paperFormat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum PaperFormat {
    A0,
    A1,
    A2,
    A3,
    A4,
    A5,
    A6,
    Letter,
    Legal,
    Tabloid,
}

impl PaperFormat {
    /// Width and height in inches, portrait.
    pub fn inches(self) -> (f64, f64) {
        match self {
            PaperFormat::A0 => (33.1102, 46.811),
            PaperFormat::A1 => (23.3858, 33.1102),
            PaperFormat::A2 => (16.5354, 23.3858),
            PaperFormat::A3 => (11.6929, 16.5354),
            PaperFormat::A4 => (8.2677, 11.6929),
            PaperFormat::A5 => (5.8268, 8.2677),
            PaperFormat::A6 => (4.1339, 5.8268),
            PaperFormat::Letter => (8.5, 11.0),
            PaperFormat::Legal => (8.5, 14.0),
            PaperFormat::Tabloid => (11.0, 17.0),
        }
    }
}

/// Page margins of a PDF, each a CSS length (`1cm`, `0.5in`, `10mm`, `20px`; a bare
/// number is pixels).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PdfMargin {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top: Option<Length>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub right: Option<Length>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottom: Option<Length>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left: Option<Length>,
}

/// A CSS length: a string with a unit (`px`, `in`, `cm`, `mm`), or a number of pixels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(untagged)]
pub enum Length {
    Px(f64),
    Css(String),
}

impl Length {
    /// In inches (96 CSS pixels to the inch), or why not.
    pub fn inches(&self) -> Result<f64, String> {
        let (n, unit) = match self {
            Length::Px(n) => (*n, "px"),
            Length::Css(s) => {
                let s = s.trim();
                let split = s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len());
                let n: f64 = s[..split].trim().parse().map_err(|_| format!("'{s}' is not a length (e.g. 1cm)"))?;
                (n, &s[split..])
            }
        };
        let per_inch = match unit {
            "px" | "" => 96.0,
            "in" => 1.0,
            "cm" => 2.54,
            "mm" => 25.4,
            other => return Err(format!("unit '{other}' is not one of px, in, cm, mm")),
        };
        if !n.is_finite() || n < 0.0 {
            return Err("must be 0 or more".into());
        }
        Ok(n / per_inch)
    }
}

/// How a PDF is printed (`pdfOptions`, with `pdf: true`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema, schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PdfOptionsIn {
    /// A paper size (default a4, unless the page's CSS sets one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper_format: Option<PaperFormat>,
    /// A paper width instead of a format (with paperHeight): `210mm`, `8.5in`, or pixels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper_width: Option<Length>,
    /// A paper height instead of a format (with paperWidth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper_height: Option<Length>,
    /// Print in landscape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landscape: Option<bool>,
    /// Page margins (default none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin: Option<PdfMargin>,
    /// Print backgrounds (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub print_background: Option<bool>,
    /// Scale of the page's rendering, 0.1-2 (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 0.1, max = 2.0)))]
    pub scale: Option<f64>,
    /// Pages to print, e.g. `1-3, 5` (default all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = 200)))]
    pub page_ranges: Option<String>,
    /// HTML of each page's header; elements of class pageNumber, totalPages, date, title and
    /// url are filled in. Give it a font-size (the default is tiny).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::PDF_TEMPLATE_MAX)))]
    pub header_template: Option<String>,
    /// HTML of each page's footer, as headerTemplate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(length(max = bounds::PDF_TEMPLATE_MAX)))]
    pub footer_template: Option<String>,
    /// The whole page on one sheet: as wide as the paper, as tall as the page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit_one_page: Option<bool>,
}

/// Checked PDF settings, in inches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PdfSettings {
    /// None: the page's CSS size, else A4.
    pub paper: Option<(f64, f64)>,
    pub landscape: bool,
    /// top, right, bottom, left
    pub margin: [f64; 4],
    pub print_background: bool,
    pub scale: f64,
    pub page_ranges: Option<String>,
    pub header_template: Option<String>,
    pub footer_template: Option<String>,
    pub fit_one_page: bool,
}

impl Default for PdfSettings {
    fn default() -> Self {
        PdfSettings {
            paper: None,
            landscape: false,
            margin: [0.0; 4],
            print_background: true,
            scale: 1.0,
            page_ranges: None,
            header_template: None,
            footer_template: None,
            fit_one_page: false,
        }
    }
}

impl PdfOptionsIn {
    /// The checks beyond the shape, each refusal naming `pdfOptions.<field>`.
    pub fn check(self) -> Result<PdfSettings, FieldError> {
        let f = |name: &str| format!("pdfOptions.{name}");
        let len = |name: &str, l: &Length| {
            l.inches().map_err(|e| FieldError::new(f(name), e)).and_then(|v| {
                if v > 200.0 { Err(FieldError::new(f(name), "must be at most 200 inches")) } else { Ok(v) }
            })
        };
        let paper = match (self.paper_format, &self.paper_width, &self.paper_height) {
            (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
                return Err(FieldError::new(f("paperWidth"), "cannot be combined with paperFormat"));
            }
            (Some(p), None, None) => Some(p.inches()),
            (None, Some(w), Some(h)) => {
                let (w, h) = (len("paperWidth", w)?, len("paperHeight", h)?);
                if w < 0.5 || h < 0.5 {
                    return Err(FieldError::new(f("paperWidth"), "paper must be at least half an inch each way"));
                }
                Some((w, h))
            }
            (None, Some(_), None) => return Err(FieldError::new(f("paperHeight"), "is required with paperWidth")),
            (None, None, Some(_)) => return Err(FieldError::new(f("paperWidth"), "is required with paperHeight")),
            (None, None, None) => None,
        };
        let m = self.margin.unwrap_or_default();
        let mut margin = [0.0; 4];
        for (i, (name, v)) in
            [("top", &m.top), ("right", &m.right), ("bottom", &m.bottom), ("left", &m.left)].into_iter().enumerate()
        {
            if let Some(v) = v {
                margin[i] = len(&format!("margin.{name}"), v)?;
            }
        }
        let scale = self.scale.unwrap_or(1.0);
        if !(0.1..=2.0).contains(&scale) {
            return Err(FieldError::new(f("scale"), "must be between 0.1 and 2"));
        }
        let page_ranges = match self.page_ranges.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(r) if r.len() <= 200 && valid_ranges(r) => Some(r.to_string()),
            Some(r) => {
                return Err(FieldError::new(f("pageRanges"), format!("'{r}' is not a list of pages like 1-3, 5")));
            }
        };
        let template = |name: &str, t: Option<String>| match t {
            Some(t) if t.len() > bounds::PDF_TEMPLATE_MAX => {
                Err(FieldError::new(f(name), "must be at most 16384 bytes"))
            }
            Some(t) if t.trim().is_empty() => Ok(None),
            other => Ok(other),
        };
        Ok(PdfSettings {
            paper,
            landscape: self.landscape.unwrap_or(false),
            margin,
            print_background: self.print_background.unwrap_or(true),
            scale,
            page_ranges,
            header_template: template("headerTemplate", self.header_template)?,
            footer_template: template("footerTemplate", self.footer_template)?,
            fit_one_page: self.fit_one_page.unwrap_or(false),
        })
    }
}

/// `1-3, 5, 8-`: numbers from 1, ranges with a dash (open at the end), separated by commas.
fn valid_ranges(r: &str) -> bool {
    r.split(',').all(|part| {
        let part = part.trim();
        let num =
            |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()) && s.parse::<u32>().is_ok_and(|n| n >= 1);
        match part.split_once('-') {
            None => num(part),
            Some((a, b)) => num(a.trim()) && (b.trim().is_empty() || num(b.trim())),
        }
    })
}
