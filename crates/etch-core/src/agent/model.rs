//! One model pass of the loop: the request built, the stream read into
//! text, reasoning and tool calls, and the answer, usage and metrics
//! appended. Part of the loop ([`super::Agent`]).

#[allow(clippy::wildcard_imports)]
use super::*;

impl Agent {
    /// A model or level chosen during the run applies from here on (the
    /// next request, and a compaction before it); the log says so first.
    pub(super) fn take_switch(&self, state: &mut RunState<'_>) -> Result<(), RunError> {
        if let Some(switch) = self.switch.as_ref().and_then(|s| s.take()) {
            for (kind, data) in &switch.records {
                state.append(kind, data)?;
            }
            state.client = switch.client;
        }
        Ok(())
    }

    /// Streams one model pass and appends what it produced in canonical
    /// order: reasoning, assistant message, usage, response, provider items,
    /// metrics (E-SES-15). A failed pass is logged with stop reason `error`
    /// (text only, never replayed) and returned as the run's error; a
    /// cancelled pass appends nothing (G20).
    pub(super) async fn model_pass(
        &self,
        state: &mut RunState<'_>,
        require_tool: bool,
        cancel: &CancellationToken,
    ) -> Result<Pass, RunError> {
        self.take_switch(state)?;
        let mut options = self.config.options.clone();
        options.require_tool = require_tool;
        if require_tool {
            options.max_output_tokens = self.config.required_reply_tokens;
        }
        let messages = match self.at(Point::Context) {
            None => state.history.clone(),
            Some(intercept) => {
                // E-HOOK-11: a rewritten list is not the history a
                // transport's continuation check compares against.
                options.no_continuation = true;
                let answer = until_cancelled(intercept.context(state.history.clone()), cancel)
                    .await
                    .ok_or(RunError::Cancelled)?;
                hook_result(state.records(answer)?, "ContextBuild")?
            }
        };
        let request = ModelRequest {
            system: self.config.system.clone(),
            messages: with_project(&self.project, messages),
            tools: self.tools.specs(),
            options,
        };
        state
            .observer
            .agent_event(&AgentEvent::MessageStart { message: None });
        let stream = state.client.stream(request, cancel.child_token());
        let Some(mut pass) = collect(stream, cancel, &mut *state.observer).await else {
            return Err(RunError::Cancelled);
        };
        if pass.aborted {
            // What the user saw stays: the text that had streamed, logged
            // as an interrupted answer (never its half-made tool calls),
            // so the screen, `etch show` and the next request agree.
            let content: Vec<ContentPart> = pass
                .content
                .into_iter()
                .filter(|p| matches!(p, ContentPart::Text { text } if !text.trim().is_empty()))
                .collect();
            state.append(
                types::MESSAGE_ASSISTANT,
                &AssistantData {
                    content: content.clone(),
                    provider: state.client.provider().to_string(),
                    model: state.client.model().to_string(),
                    stop_reason: StopReason::Aborted,
                    error_message: None,
                    recovered_text: None,
                },
            )?;
            let message = Message::Assistant { content };
            state.observer.agent_event(&AgentEvent::MessageEnd {
                message: &message,
                stop_reason: Some(StopReason::Aborted),
            });
            // Replayed as the log's projection replays it: only with text.
            if matches!(&message, Message::Assistant { content } if !content.is_empty()) {
                state.history.push(message);
            }
            return Err(RunError::Cancelled);
        }
        let outcome = pass.outcome.take().unwrap_or(Ok(StopReason::Stop));
        let recovered_text = if outcome.is_ok() {
            self.recover_calls(&mut pass)
        } else {
            None
        };
        for text in &pass.reasoning {
            state.append(
                types::MODEL_REASONING,
                &ReasoningData { text: text.clone() },
            )?;
        }
        let has_calls = pass
            .content
            .iter()
            .any(|p| matches!(p, ContentPart::ToolCall(_)));
        let (stop_reason, error_message, content) = match &outcome {
            Ok(_) if has_calls => (StopReason::ToolUse, None, pass.content.clone()),
            Ok(reason) => (*reason, None, pass.content.clone()),
            Err(err) => (
                StopReason::Error,
                Some(err.message.clone()),
                pass.content
                    .iter()
                    .filter(|p| matches!(p, ContentPart::Text { .. }))
                    .cloned()
                    .collect(),
            ),
        };
        pass.assistant_event_id = state.append(
            types::MESSAGE_ASSISTANT,
            &AssistantData {
                content: content.clone(),
                provider: state.client.provider().to_string(),
                model: state.client.model().to_string(),
                stop_reason,
                error_message,
                recovered_text,
            },
        )?;
        let message = Message::Assistant { content };
        state.observer.agent_event(&AgentEvent::MessageEnd {
            message: &message,
            stop_reason: None,
        });
        if let Some(usage) = &pass.usage {
            state.append(types::MODEL_USAGE, usage)?;
        }
        if let Some((response_id, model)) = &pass.response {
            state.append(
                types::MODEL_RESPONSE,
                &ResponseData {
                    provider: state.client.provider().to_string(),
                    api: state.client.api().unwrap_or_default().to_string(),
                    response_id: response_id.clone(),
                    model: model.clone(),
                },
            )?;
        }
        for item in &pass.provider_items {
            state.append(types::MODEL_PROVIDER_ITEM, item)?;
        }
        if let Some(metrics) = &pass.metrics {
            state.append(types::MODEL_METRICS, metrics)?;
        }
        match outcome {
            Ok(_) => {
                state.history.push(message);
                for item in &pass.provider_items {
                    state.history.push(Message::ProviderItem(item.clone()));
                }
                if let Some(usage) = &pass.usage {
                    state.estimate.usage(usage, state.history.len());
                }
                Ok(pass)
            }
            Err(source) => Err(RunError::Model {
                provider: state.client.provider().to_string(),
                source,
            }),
        }
    }
}

impl Agent {
    /// Takes tool calls the model sent as text back as calls (see
    /// [`crate::recover`]); returns the original text when it did.
    fn recover_calls(&self, pass: &mut Pass) -> Option<String> {
        if pass
            .content
            .iter()
            .any(|p| matches!(p, ContentPart::ToolCall(_)))
        {
            return None;
        }
        let text = etch_model::content::joined_text(&pass.content);
        let names: Vec<String> = self.tools.specs().into_iter().map(|s| s.name).collect();
        // Unique within the session: the pass's time and the call's place.
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let content = crate::recover::recover(&text, &names, |i| format!("recovered-{stamp}-{i}"))?;
        pass.content = content;
        Some(text)
    }
}

/// `messages` with the per-project `layers` at the start of the first
/// message's content (a user message: a prompt, or a summary after
/// compaction), or as a user message of their own when the conversation
/// starts otherwise. One message, not two, because some chat templates
/// refuse two user messages in a row.
fn with_project(layers: &[SystemLayer], mut messages: Vec<Message>) -> Vec<Message> {
    let texts: Vec<&str> = layers
        .iter()
        .map(|l| l.text.as_str())
        .filter(|t| !t.is_empty())
        .collect();
    if texts.is_empty() {
        return messages;
    }
    // Text parts are sent joined as they are: a blank line ends the
    // context before the prompt.
    let part = ContentPart::text(format!("{}\n\n", texts.join("\n\n")));
    match messages.first_mut() {
        Some(Message::User { content }) => content.insert(0, part),
        _ => messages.insert(
            0,
            Message::User {
                content: vec![part],
            },
        ),
    }
    messages
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(name: &str, text: &str) -> SystemLayer {
        SystemLayer {
            name: name.into(),
            text: text.into(),
        }
    }

    fn texts(message: &Message) -> Vec<String> {
        match message {
            Message::User { content } => content
                .iter()
                .filter_map(|p| match p {
                    ContentPart::Text { text } => Some(text.clone()),
                    ContentPart::ToolCall(_) | ContentPart::Image(_) => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The project layers lead the first user message, as one part; an
    /// empty list changes nothing; a conversation that does not start with
    /// a user message gets one of its own.
    #[test]
    fn project_layers_lead_the_first_user_message() {
        let layers = [
            layer("AGENTS.md", "rules"),
            layer("skills", ""),
            layer("environment", "cwd"),
        ];
        let prompt = Message::User {
            content: vec![ContentPart::text("hi")],
        };
        let out = with_project(&layers, vec![prompt.clone()]);
        assert_eq!(out.len(), 1);
        assert_eq!(texts(&out[0]), ["rules\n\ncwd\n\n", "hi"]);
        assert_eq!(
            etch_model::content::joined_text(match &out[0] {
                Message::User { content } => content,
                _ => unreachable!(),
            }),
            "rules\n\ncwd\n\nhi"
        );
        assert_eq!(with_project(&[], vec![prompt.clone()]), vec![prompt]);
        let answer = Message::Assistant {
            content: vec![ContentPart::text("earlier")],
        };
        let out = with_project(&layers, vec![answer.clone()]);
        assert_eq!(out.len(), 2);
        assert_eq!(texts(&out[0]), ["rules\n\ncwd\n\n"]);
        assert_eq!(out[1], answer);
    }
}
