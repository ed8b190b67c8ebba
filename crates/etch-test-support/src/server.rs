//! The fake server itself: the accept loop, one thread per connection, the
//! request log and the orderly shutdown on drop.

use std::collections::{HashMap, VecDeque};
use std::io::{self, BufReader, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crate::http;
use crate::invariants;
use crate::recorded::Recorded;
use crate::reply::{self, Next, Reply};
use crate::ws;

/// How long `Drop` tries to connect to its own listener to wake the accept loop.
const WAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the accept loop backs off after a failed `accept` (e.g. too many open
/// files), so a persistent error does not spin a core.
const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_millis(10);

/// A scripted HTTP/1.1 server on `127.0.0.1` at a free port.
///
/// Every request is recorded (in arrival order, once its body has been read) and
/// answered with the next unused [`Reply`]; requests beyond the script get
/// [`UNSCRIPTED_STATUS`](crate::UNSCRIPTED_STATUS) with a JSON error body, and
/// are recorded too. The messages a client sends during a [`Reply::WebSocket`]
/// exchange are recorded in the same log (method `WS`) without using up
/// replies. Each connection is served on its own thread, so a stalled reply
/// does not hold up others, and connections are kept alive between requests
/// when the client asks for it.
///
/// Dropping the server stops it: it shuts down every open connection (cutting
/// short gaps and stalls), wakes and joins the accept thread, which joins every
/// connection thread, and the port is released. Drop does not hang on clients
/// that keep idle connections open.
#[derive(Debug)]
pub struct FakeServer {
    /// Where the server listens.
    addr: SocketAddr,
    /// The state shared with the accept and connection threads.
    shared: Arc<Shared>,
    /// The accept thread, joined on drop (taken then, hence the `Option`).
    accept: Option<JoinHandle<()>>,
}

/// The state shared between the handle and the server's threads.
#[derive(Debug)]
struct Shared {
    /// Everything mutable, behind one lock so that recording a request and taking
    /// its reply happen together (the n-th recorded request gets the n-th reply).
    state: Mutex<State>,
    /// Signalled when a request is recorded or the server starts stopping, for
    /// `wait_for_requests` and for interruptible pauses.
    changed: Condvar,
}

/// The mutable part of [`Shared`].
#[derive(Debug)]
struct State {
    /// The replies not used yet, next first.
    replies: VecDeque<Reply>,
    /// Every request received so far, in order.
    requests: Vec<Recorded>,
    /// Requests that broke the tool-pairing invariant, and how.
    violations: Vec<String>,
    /// Set by `Drop`; threads check it to stop.
    stopping: bool,
    /// A clone of every open connection's socket by connection number, so `Drop`
    /// can shut them down and unblock their threads.
    open: HashMap<u64, TcpStream>,
}

impl Shared {
    /// Locks the state; a panic on another thread must not make the server (or
    /// its drop) panic too, so a poisoned lock is used as is.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the server is shutting down.
    fn stopping(&self) -> bool {
        self.lock().stopping
    }

    /// Sleeps for `duration` unless the server starts stopping first; returns
    /// whether it is still running, so callers stop writing when it is not.
    fn pause(&self, duration: Duration) -> bool {
        let state = self.lock();
        if duration.is_zero() {
            return !state.stopping;
        }
        let (state, _) = self
            .changed
            .wait_timeout_while(state, duration, |state| !state.stopping)
            .unwrap_or_else(PoisonError::into_inner);
        !state.stopping
    }

    /// Records a request and takes the reply scripted for it, if any. A
    /// model request whose tool results do not follow their calls uses up
    /// its reply but is answered with 400, and is remembered as a violation.
    fn record(&self, request: Recorded) -> Option<Reply> {
        let violation = (request.method == "POST")
            .then(|| {
                invariants::tool_pairing_violation(&request.body)
                    .or_else(|| invariants::image_violation(&request.body))
            })
            .flatten();
        let reply = {
            let mut state = self.lock();
            let number = state.requests.len() + 1;
            state.requests.push(request);
            let scripted = state.replies.pop_front();
            match violation {
                Some(problem) => {
                    let message = format!(
                        "etch-test-support: request {number} breaks a request invariant: {problem}"
                    );
                    state.violations.push(message.clone());
                    Some(Reply::json(
                        400,
                        &serde_json::json!({"error": {"message": message, "type": "invalid_request_error"}}),
                    ))
                }
                None => scripted,
            }
        };
        self.changed.notify_all();
        reply
    }

    /// Records a message received on a WebSocket connection. Unlike
    /// [`Shared::record`] it takes no scripted reply, because the whole
    /// exchange was scripted by the reply its handshake took; it still wakes
    /// `wait_for_requests`, so tests can wait for messages too.
    fn record_message(&self, message: Recorded) {
        self.lock().requests.push(message);
        self.changed.notify_all();
    }
}

impl FakeServer {
    /// Starts a server on a free loopback port that answers successive requests
    /// with `replies` in order, each reply used once. Requests after the last
    /// reply are answered with status
    /// [`UNSCRIPTED_STATUS`](crate::UNSCRIPTED_STATUS) (500) and a JSON error
    /// whose message is "etch-test-support: no scripted reply"; they are still
    /// recorded, so a test can see what the unexpected request was.
    pub fn start(replies: Vec<Reply>) -> io::Result<Self> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                replies: replies.into(),
                requests: Vec::new(),
                violations: Vec::new(),
                stopping: false,
                open: HashMap::new(),
            }),
            changed: Condvar::new(),
        });
        let accept = thread::Builder::new()
            .name(format!("fake-server-{}", addr.port()))
            .spawn({
                let shared = Arc::clone(&shared);
                move || accept_loop(&listener, &shared)
            })?;
        Ok(Self {
            addr,
            shared,
            accept: Some(accept),
        })
    }

    /// The base URL, `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The socket address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().requests.clone()
    }

    /// The requests that broke the tool-pairing invariant, each saying how
    /// (empty when every request was well formed).
    pub fn violations(&self) -> Vec<String> {
        self.shared.lock().violations.clone()
    }

    /// Blocks until at least `n` requests have been received or `timeout` has
    /// passed, then returns every request received so far — which may be fewer
    /// than `n` on timeout, so tests should assert on the length.
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> Vec<Recorded> {
        let state = self.shared.lock();
        let (state, _) = self
            .shared
            .changed
            .wait_timeout_while(state, timeout, |state| state.requests.len() < n)
            .unwrap_or_else(PoisonError::into_inner);
        state.requests.clone()
    }
}

impl Drop for FakeServer {
    /// Stops the server: marks it stopping, shuts every open connection down
    /// (which unblocks their threads), wakes the accept loop with a connection
    /// of its own and joins it. If that wake-up connection cannot be made the
    /// accept thread is left detached rather than risking a hang.
    fn drop(&mut self) {
        let violations = {
            let mut state = self.shared.lock();
            state.stopping = true;
            for stream in state.open.values() {
                let _ = stream.shutdown(Shutdown::Both);
            }
            std::mem::take(&mut state.violations)
        };
        self.shared.changed.notify_all();
        let woke = TcpStream::connect_timeout(&self.addr, WAKE_TIMEOUT).is_ok();
        if let Some(accept) = self.accept.take()
            && (woke || accept.is_finished())
        {
            let _ = accept.join();
        }
        // A malformed conversation fails the test that produced it even if
        // the test did not look at the 400 it got; never a second panic.
        assert!(
            violations.is_empty() || thread::panicking(),
            "{}",
            violations.join("\n")
        );
    }
}

/// Accepts connections until the server stops, serving each on its own thread,
/// then joins those threads.
fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    let mut workers: Vec<JoinHandle<()>> = Vec::new();
    let mut next_id: u64 = 0;
    for incoming in listener.incoming() {
        let stream = match incoming {
            Ok(stream) => stream,
            Err(_) if shared.stopping() => break,
            Err(_) => {
                thread::sleep(ACCEPT_ERROR_BACKOFF);
                continue;
            }
        };
        let id = next_id;
        next_id += 1;
        {
            let mut state = shared.lock();
            if state.stopping {
                break;
            }
            // Registered under the lock that `Drop` takes to set `stopping`, so a
            // connection is either shut down by `Drop` or never served.
            let Ok(handle) = stream.try_clone() else {
                continue;
            };
            state.open.insert(id, handle);
        }
        workers.retain(|worker| !worker.is_finished());
        let worker_shared = Arc::clone(shared);
        let spawned = thread::Builder::new()
            .name(format!("fake-server-conn-{id}"))
            .spawn(move || {
                serve_connection(stream, &worker_shared);
                worker_shared.lock().open.remove(&id);
            });
        match spawned {
            Ok(worker) => workers.push(worker),
            Err(_) => {
                if let Some(stream) = shared.lock().open.remove(&id) {
                    let _ = stream.shutdown(Shutdown::Both);
                }
            }
        }
    }
    for worker in workers {
        let _ = worker.join();
    }
}

/// Serves requests on one connection until the client closes it, a reply ends
/// it, the request is malformed (answered with 400) or the server stops. A
/// WebSocket upgrade met by a [`Reply::WebSocket`] hands the connection over to
/// [`ws::serve`] for good.
fn serve_connection(stream: TcpStream, shared: &Shared) {
    let _ = stream.set_nodelay(true);
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut writer = stream;
    loop {
        let head = match http::read_head(&mut reader) {
            Ok(Some(head)) => head,
            Ok(None) => break,
            Err(err) => {
                reject(&mut writer, &err, shared);
                break;
            }
        };
        if head.expects_continue()
            && (writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").is_err()
                || writer.flush().is_err())
        {
            break;
        }
        let body = match http::read_body(&mut reader, &head) {
            Ok(body) => body,
            Err(err) => {
                reject(&mut writer, &err, shared);
                break;
            }
        };
        let keep_alive = head.keep_alive();
        let websocket_key = head.websocket_key().map(str::to_owned);
        let path = head.target.clone();
        let reply = shared.record(Recorded {
            method: head.method,
            path: head.target,
            headers: head.headers,
            body,
        });
        if let (Some(Reply::WebSocket { turns, then }), Some(key)) = (&reply, &websocket_key) {
            let exchange = ws::Exchange {
                key,
                path: &path,
                turns,
                then: *then,
            };
            ws::serve(reader, writer, &exchange, &|message| {
                shared.record_message(message);
            });
            return;
        }
        let pause = |duration| shared.pause(duration);
        match reply::write_reply(&mut writer, reply.as_ref(), keep_alive, &pause) {
            Ok(Next::KeepOpen) if !shared.stopping() => {}
            Ok(_) | Err(_) => break,
        }
    }
    let _ = writer.shutdown(Shutdown::Both);
}

/// Answers a request that is not HTTP the server understands with 400, unless the
/// error is just a broken connection or the server is stopping.
fn reject(writer: &mut TcpStream, err: &io::Error, shared: &Shared) {
    if err.kind() == io::ErrorKind::InvalidData && !shared.stopping() {
        let _ = reply::write_body(
            writer,
            400,
            "text/plain; charset=utf-8",
            &format!("etch-test-support: bad request: {err}"),
            &[],
            false,
        );
    }
}
