//! The commands that can take long (a shell command, a compaction, a
//! navigation that summarizes the branch it leaves): they run on a task of
//! their own, like a prompt, so the host keeps answering and `abort`
//! cancels them. Their response is sent when the task ends.

use std::sync::Arc;

use etch_protocol::{CommandBody, CompactionOutcome, Event, EventBody};
use serde_json::json;

use super::{Answer, Finished, Host, Job, Output, Sink};
use crate::session::{CompactFailure, Session};

/// Whether `body` is a command that runs on a task of its own.
pub(super) fn is_long(body: &CommandBody) -> bool {
    matches!(
        body,
        CommandBody::Bash { .. } | CommandBody::Compact { .. } | CommandBody::Navigate { .. }
    )
}

impl Host {
    /// Starts the long command `body` (see [`is_long`]) on a task.
    pub(super) fn launch_long(
        &mut self,
        mut session: Session,
        id: Option<String>,
        body: CommandBody,
    ) {
        let name = body.name();
        self.look_at(&session);
        match body {
            CommandBody::Bash {
                command,
                exclude_from_context,
            } => {
                self.launch(id, Job::Command(name), move |token| async move {
                    let answer = session
                        .bash(&command, !exclude_from_context, &token)
                        .await
                        .map(|(output, failed)| {
                            // Pi's BashResult fields beside etch's own: the
                            // exit code the result's last line names (0 when
                            // the command succeeded), whether a stream was
                            // cut to its tail.
                            let cancelled = token.is_cancelled();
                            let exit_code = if cancelled {
                                None
                            } else if failed {
                                exit_code_of(&output)
                            } else {
                                Some(0)
                            };
                            Some(json!({
                                "output": output,
                                "isError": failed,
                                "cancelled": cancelled,
                                "exitCode": exit_code,
                                "truncated": output.contains(" truncated: kept last "),
                            }))
                        })
                        .map_err(|e| e.to_string());
                    (session, Finished::Command(answer))
                });
            }
            CommandBody::Compact {
                custom_instructions,
                force,
            } => {
                let sink = Arc::clone(&self.sink);
                // A focus is an explicit request: it forces, as `force`.
                let force = force || custom_instructions.is_some();
                self.launch(id.clone(), Job::Command(name), move |token| async move {
                    let answer =
                        compact(&mut session, &sink, id, custom_instructions, force, &token).await;
                    (session, Finished::Command(answer))
                });
            }
            CommandBody::Navigate {
                entry_id,
                summarize,
            } => {
                let sink = Arc::clone(&self.sink);
                self.launch(id.clone(), Job::Command(name), move |token| async move {
                    let answer = session
                        .navigate(&entry_id, summarize, &token)
                        .await
                        .map(|done| {
                            mirror(&sink, id.as_ref(), &done.counted);
                            Some(json!({
                                "entryId": entry_id,
                                "navigateEventId": done.event_id,
                                "summary": done.summary,
                            }))
                        })
                        .map_err(|e| e.to_string());
                    (session, Finished::Command(answer))
                });
            }
            other => {
                self.session = Some(session);
                let bug = format!(
                    "{} is not a long command; this is a bug in etch",
                    other.name()
                );
                self.respond(id, other.name(), Err(bug));
            }
        }
    }
}

/// The events a front end sees for log lines a long command appended
/// (see [`crate::events::line_event`]).
fn mirror(sink: &Sink, id: Option<&String>, lines: &[String]) {
    for line in lines {
        if let Some(body) = crate::events::line_event(line) {
            sink(Output::Event(Event {
                id: id.cloned(),
                body,
            }));
        }
    }
}

/// Manual compaction with its start and end events.
async fn compact(
    session: &mut Session,
    sink: &Sink,
    id: Option<String>,
    focus: Option<String>,
    force: bool,
    cancel: &tokio_util::sync::CancellationToken,
) -> Answer {
    let emit = |body| {
        sink(Output::Event(Event {
            id: id.clone(),
            body,
        }));
    };
    let reason = "manual".to_owned();
    emit(EventBody::CompactionStart {
        reason: reason.clone(),
    });
    let result = session
        .compact(focus.as_deref(), force, cancel, &mut |line| {
            mirror(sink, id.as_ref(), &[line.to_owned()]);
        })
        .await;
    let (outcome, answer) = match result {
        Ok(etch_compact::Outcome::Compacted { data, event_id, .. }) => (
            CompactionOutcome::Compacted {
                tokens_before: data.tokens_before,
                tokens_after: data.tokens_after,
            },
            Ok(Some(json!({
                "summary": data.summary,
                // Pi's CompactionResult names the first kept entry.
                "firstKeptEntryId": data.first_kept_event_id,
                "tokensBefore": data.tokens_before,
                "tokensAfter": data.tokens_after,
                "summaryEventId": event_id,
            }))),
        ),
        Ok(etch_compact::Outcome::Skipped(skip)) => (
            CompactionOutcome::Skipped {
                reason: skip.to_string(),
            },
            Ok(Some(json!({ "skipped": skip.to_string() }))),
        ),
        Err(err) => {
            let why = match &err {
                CompactFailure::Compact(e) => format!("{e}; the log was not changed"),
                CompactFailure::Session(e) => e.to_string(),
            };
            (
                CompactionOutcome::Failed {
                    reason: why.clone(),
                },
                Err(why),
            )
        }
    };
    emit(EventBody::CompactionEnd { reason, outcome });
    answer
}

/// The exit code a `bash` result's last line names (`Command exited with
/// code N`), if it names one.
fn exit_code_of(output: &str) -> Option<i64> {
    output
        .trim_end()
        .lines()
        .last()?
        .strip_prefix("Command exited with code ")?
        .trim()
        .parse()
        .ok()
}
