//! The provider interface: one method that turns a request into a stream.
//!
//! Providers run their transport on a spawned task and push [`StreamEvent`]s
//! into a bounded channel; the core pulls them with [`ModelStream::next`]. The
//! bound gives natural back-pressure, and dropping the stream tells the
//! provider nobody is listening any more.

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::request::ModelRequest;
use crate::stream::StreamEvent;

/// How many events may wait between a provider task and the core.
const STREAM_BUFFER: usize = 256;

/// The models an endpoint offers, on their way (see
/// [`ModelClient::list_models`]).
pub type ModelsFuture<'a> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Vec<String>, crate::ModelError>> + Send + 'a>,
>;

/// A model provider.
pub trait ModelClient: Send + Sync {
    /// Provider name as recorded in `message.assistant` (`echo`, `openai`…).
    fn provider(&self) -> &str;
    /// Model name as recorded in `message.assistant`.
    fn model(&self) -> &str;
    /// API shape in use (`chat`, `responses`…), when the provider has several.
    fn api(&self) -> Option<&str> {
        None
    }
    /// Starts one model pass. Never fails synchronously: every failure arrives
    /// as a [`StreamEvent::Error`] (P-LOOP-08). `cancel` aborts the pass.
    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream;
    /// The model names the endpoint offers, for a front end's model
    /// picker (`GET /models`); bounded in time by the provider. Empty when
    /// the provider has no such list (the offline echo model).
    fn list_models(&self) -> ModelsFuture<'_> {
        Box::pin(async { Ok(Vec::new()) })
    }
}

/// The receiving end of a model pass.
#[derive(Debug)]
pub struct ModelStream {
    /// Events pushed by the provider task.
    rx: mpsc::Receiver<StreamEvent>,
}

impl ModelStream {
    /// Waits for the next event; `None` means the provider task ended.
    pub async fn next(&mut self) -> Option<StreamEvent> {
        self.rx.recv().await
    }
}

/// The sending end handed to a provider task.
#[derive(Debug, Clone)]
pub struct StreamSender {
    /// Channel into the core's [`ModelStream`].
    tx: mpsc::Sender<StreamEvent>,
}

impl StreamSender {
    /// Sends one event. Returns `false` when the core dropped the stream, so
    /// the provider can stop work early.
    pub async fn send(&self, event: StreamEvent) -> bool {
        self.tx.send(event).await.is_ok()
    }
}

/// Creates a connected sender/stream pair for a provider to use.
pub fn stream_channel() -> (StreamSender, ModelStream) {
    let (tx, rx) = mpsc::channel(STREAM_BUFFER);
    (StreamSender { tx }, ModelStream { rx })
}
