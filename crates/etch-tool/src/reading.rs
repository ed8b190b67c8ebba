//! A source that offers only its tools that say they only read
//! ([`Tool::read_only`]): what `--read-only` offers from plugins and MCP
//! servers, so that a server's `write_file` is not offered when the
//! built-in `write` is not.
//!
//! This module must not know where the tools come from.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::registry::ToolSource;
use crate::tool::Tool;

/// `inner`'s read-only tools.
pub struct OnlyReading(pub Arc<dyn ToolSource>);

impl ToolSource for OnlyReading {
    fn ready(&self) -> Vec<Arc<dyn Tool>> {
        self.0
            .ready()
            .into_iter()
            .filter(|tool| tool.read_only())
            .collect()
    }

    fn pending(&self) -> bool {
        self.0.pending()
    }

    fn settle(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        self.0.settle()
    }

    fn settle_for(&self, name: &str) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        self.0.settle_for(name)
    }

    fn awaited(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        self.0.awaited()
    }

    fn diagnostics(&self) -> Vec<(String, String)> {
        self.0.diagnostics()
    }
}
