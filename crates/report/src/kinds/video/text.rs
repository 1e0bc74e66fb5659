//! `headroom bench video`: what was captured from and how, the capture's figures as aligned
//! columns, the findings and notes below; `--list-formats` as v4l2-ctl lists them.

use crate::summary::{Place, Summary};
use crate::terminal::Style;

/// The text of a capture, or of a format listing, from the run's summary.
pub(crate) fn render(s: &Summary, style: &Style) -> String {
    let title = format!(
        "headroom bench video {}",
        s.target.as_deref().unwrap_or_default()
    );
    crate::terminal::sections::parts_text(
        title.trim_end(),
        s.parts_at(Place::Measured)
            .chain(s.parts_at(Place::Listing)),
        s,
        style,
    )
}
