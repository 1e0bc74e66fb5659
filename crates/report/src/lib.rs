//! The result document, findings, renderers.
