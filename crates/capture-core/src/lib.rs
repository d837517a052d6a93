//! Domain types of Capture: ids, capture options and their validation, plans, the
//! calendar-month quota window, the sending rules of campaigns and the stable error codes. No I/O lives here.

pub mod clock;
pub mod credentials;
pub mod devices;
pub mod egress;
pub mod error;
pub mod events;
pub mod ids;
pub mod limits;
pub mod metadata;
pub mod monitor;
pub mod options;
pub mod plan;
pub mod profile;
pub mod proxies;
#[cfg(feature = "schema")]
pub mod schema;
pub mod sending;
pub mod states;
pub mod time;

pub use error::{ErrorCode, FieldError};
pub use ids::{
    AuditId, CampaignId, DeliveryId, EndpointId, KeyId, MonitorCheckId, MonitorId, ProfileId, ProxyId, RenderKeyId,
    RunId, ScreenshotId, StorageDestinationId, TypedId, UserId,
};
pub use options::{CaptureOptions, CookieConsent, ImageFormat, WaitUntil};
pub use plan::{Plan, PlanLimits};
pub use states::{
    CampaignStatus, DeliveryStatus, EndReason, JobStatus, OutputFormat, ProfileStatus, RunKind, RunStatus,
    StorageStatus, TargetState,
};
