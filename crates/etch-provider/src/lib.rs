//! Model providers: adapters from vendor APIs to the provider-neutral
//! [`etch_model::ModelClient`] stream.
//!
//! Each provider lives in its own module and knows only its own wire format
//! and `etch-model` types; none knows about sessions, tools or the loop. The
//! `echo` provider is the deterministic offline fixture (G9); `sse` is the
//! frame reader every HTTP streaming provider shares.

pub mod anthropic;
pub mod driver;
pub mod echo;
pub mod http;
pub mod models;
pub mod openai;
pub mod sse;

pub use echo::EchoClient;

#[cfg(test)]
pub(crate) mod testutil {
    //! Helpers shared by the providers' end-to-end tests.

    use etch_model::{Metrics, ModelClient, ModelRequest, StreamEvent};
    use tokio_util::sync::CancellationToken;

    /// Runs one pass of `client` to its end and returns every event.
    pub async fn collect(client: &dyn ModelClient, request: ModelRequest) -> Vec<StreamEvent> {
        let mut stream = client.stream(request, CancellationToken::new());
        let mut events = Vec::new();
        while let Some(event) = stream.next().await {
            events.push(event);
        }
        events
    }

    /// The metrics event of a pass; panics (failing the test) if none came.
    pub fn metrics(events: &[StreamEvent]) -> &Metrics {
        events
            .iter()
            .find_map(|e| match e {
                StreamEvent::Metrics(m) => Some(m),
                _ => None,
            })
            .expect("the pass sent no metrics")
    }
}
