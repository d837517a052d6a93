//! What a session captures: screenshots, PDFs and the screencast.

use serde_json::Value;

use super::{
    CaptureError, Image, ImageFormat, PdfSpec, RECT, Screencast, ScreencastOptions, ScreenshotSpec, SessionPage,
    ShotArea, format_name, p, s,
};

impl SessionPage {
    // ---- Output ------------------------------------------------------------------------

    pub(crate) async fn screenshot(&mut self, spec: &ScreenshotSpec) -> Result<Image, CaptureError> {
        let (format, content_type) = format_name(spec.format);
        let dsf = self.device.device_scale_factor.max(0.1);
        let clip = match &spec.area {
            ShotArea::Viewport => None,
            ShotArea::FullPage => {
                let m = self.page.call(&s::GetLayoutMetrics {}).await?;
                let cap = crate::page::fullpage::MAX_OUTPUT_HEIGHT / dsf;
                let (w, h) = (m.css_content_size.width.max(1.0), m.css_content_size.height.clamp(1.0, cap));
                Some(p::Clip { x: 0.0, y: 0.0, width: w, height: h, scale: 1.0 })
            }
            ShotArea::Element(t) => {
                let obj = self.object(t).await?;
                let r = self.call_on(&obj, RECT, Vec::new()).await?;
                let num = |k: &str| r.get(k).and_then(Value::as_f64).unwrap_or(0.0);
                if num("w") <= 0.0 || num("h") <= 0.0 {
                    return Err(CaptureError::Script(format!("{t} is not visible (it has no box)")));
                }
                Some(p::Clip { x: num("x"), y: num("y"), width: num("w"), height: num("h"), scale: 1.0 })
            }
            ShotArea::Clip { x, y, width, height } => {
                if *width <= 0.0 || *height <= 0.0 {
                    return Err(CaptureError::Script("an empty clip".into()));
                }
                Some(p::Clip { x: *x, y: *y, width: *width, height: *height, scale: 1.0 })
            }
        };
        let cmd = p::CaptureScreenshot {
            format,
            quality: (spec.format != ImageFormat::Png).then_some(spec.quality.unwrap_or(80).clamp(1, 100)),
            capture_beyond_viewport: clip.is_some(),
            clip,
            from_surface: true,
            optimize_for_speed: false,
        };
        let bytes = self.page.screenshot(&cmd).await?;
        let (width, height) = crate::encode::image_size(&bytes).unwrap_or((0, 0));
        Ok(Image { bytes, width, height, content_type })
    }

    pub(crate) async fn pdf(&mut self, spec: &PdfSpec) -> Result<Vec<u8>, CaptureError> {
        if !(0.1..=2.0).contains(&spec.scale.unwrap_or(1.0)) {
            return Err(CaptureError::Script("a PDF scale must be between 0.1 and 2".into()));
        }
        let cmd = p::PrintToPdf {
            print_background: spec.print_background,
            prefer_css_page_size: true,
            paper_width: spec.paper_width,
            paper_height: spec.paper_height,
            landscape: spec.landscape,
            scale: spec.scale,
            ..Default::default()
        };
        let r = self.page.call(&cmd).await?;
        crate::encode::decode_base64(&r.data, "PDF")
    }

    pub(crate) async fn start_screencast(&mut self, o: ScreencastOptions) -> Result<Screencast, CaptureError> {
        let (tx, rx) = tokio::sync::mpsc::channel(crate::session::SCREENCAST_BUFFER);
        let format = match o.format {
            ImageFormat::Png => "png",
            _ => "jpeg",
        };
        self.hooks().screencast = Some(tx);
        let cmd = s::StartScreencast {
            format,
            quality: o.quality.clamp(1, 100),
            max_width: o.max_width.max(16),
            max_height: o.max_height.max(16),
            every_nth_frame: o.every_nth_frame.max(1),
        };
        self.page.call(&cmd).await?;
        self.screencasting = true;
        Ok(Screencast { rx })
    }

    /// A live view's frames: the page as it is now at once, then every frame the screencast
    /// makes (started for the view when nothing records; shared with a recording otherwise).
    pub(crate) async fn watch(&mut self) -> Result<Screencast, CaptureError> {
        let (tx, rx) = tokio::sync::mpsc::channel(crate::session::VIEW_BUFFER);
        let now = p::CaptureScreenshot {
            format: "jpeg",
            quality: Some(70),
            clip: None,
            from_surface: true,
            optimize_for_speed: true,
            capture_beyond_viewport: false,
        };
        let shot = self.page.call(&now).await?;
        let data = crate::encode::decode_base64(&shot.data, "screenshot")?;
        let timestamp =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
        let (width, height) = (f64::from(self.device.width), f64::from(self.device.height));
        let _ = tx.try_send(crate::session::Frame { data, timestamp, width, height });
        self.hooks().viewers.push(tx);
        if !self.screencasting {
            let o = ScreencastOptions { quality: 60, ..ScreencastOptions::default() };
            let cmd = s::StartScreencast {
                format: "jpeg",
                quality: o.quality,
                max_width: o.max_width,
                max_height: o.max_height,
                every_nth_frame: 1,
            };
            self.page.call(&cmd).await?;
            self.screencasting = true;
        }
        Ok(Screencast { rx })
    }

    pub(crate) async fn stop_screencast(&mut self) -> Result<(), CaptureError> {
        self.hooks().screencast = None;
        // Live views keep it going.
        if self.screencasting && !self.hooks().watched() {
            self.screencasting = false;
            self.page.call(&s::StopScreencast {}).await?;
        }
        Ok(())
    }
}
