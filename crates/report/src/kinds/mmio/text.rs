//! `headroom bench mmio` and `bench mem`: the Rockchip guide's table (one line per access
//! width, store and load MB/s, ns per access, DRAM beside a region) as aligned columns with
//! the units under the titles, like every other bench; what was measured above it, the
//! findings and notes below.

use crate::summary::{Place, Summary};
use crate::terminal::Style;

/// The text of `bench mmio` (a region was measured) or `bench mem` (DRAM only), from the
/// run's summary.
pub(crate) fn render(s: &Summary, style: &Style) -> String {
    let title = match &s.target {
        Some(t) => format!("headroom bench mmio {t}"),
        None => "headroom bench mem".to_string(),
    };
    crate::terminal::sections::parts_text(&title, s.parts_at(Place::Measured).take(1), s, style)
}
