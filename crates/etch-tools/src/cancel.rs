//! Cancelling a tool call whose work runs on a blocking thread
//! (E-TOOL-23): the call answers `Operation aborted` as soon as the run's
//! cancellation fires, and the work, which checks the token between files
//! and chunks, stops soon after.
//!
//! A thread cannot be interrupted in the middle of a system call, so the
//! tools never make one that can wait forever: they read only regular files
//! (see [`crate::fsutil::open_regular`]). This module must not know what the
//! work does.

use etch_tool::ToolError;
use tokio_util::sync::CancellationToken;

/// The answer of a call that was cancelled before it finished.
pub const ABORTED: &str = "Operation aborted";

/// How many lines or entries a loop handles between two checks of the
/// cancellation token, whose check takes a lock.
pub const CHECK_EVERY: usize = 4096;

/// The error of a cancelled call.
pub fn aborted() -> ToolError {
    ToolError::new(ABORTED)
}

/// Runs `work` on a blocking thread and returns its result, or
/// [`ABORTED`] at once when `cancel` fires first (the work is left to
/// notice the token on its own). `tool` names the tool in the message of a
/// crashed thread.
pub async fn blocking<T, F>(cancel: &CancellationToken, tool: &str, work: F) -> Result<T, ToolError>
where
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
    T: Send + 'static,
{
    if cancel.is_cancelled() {
        return Err(aborted());
    }
    let handle = tokio::task::spawn_blocking(work);
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(aborted()),
        joined = handle => joined.map_err(|e| ToolError::new(format!("{tool} failed: {e}")))?,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cancellation answers at once even while the work is still blocked,
    /// and a token cancelled before the call runs nothing.
    #[tokio::test]
    async fn cancel_answers_while_work_blocks() {
        let cancel = CancellationToken::new();
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let (started_tx, started) = tokio::sync::oneshot::channel::<()>();
        let call = {
            let cancel = cancel.clone();
            tokio::spawn(async move {
                blocking(&cancel, "test", move || {
                    let _ = started_tx.send(());
                    let _ = wait.recv();
                    Ok(1)
                })
                .await
            })
        };
        started.await.unwrap();
        cancel.cancel();
        assert_eq!(call.await.unwrap(), Err(aborted()));
        release.send(()).unwrap();

        let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&ran);
        let out = blocking(&cancel, "test", move || {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok(())
        })
        .await;
        assert_eq!(out, Err(aborted()));
        assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
    }
}
