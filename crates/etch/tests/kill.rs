//! Crash tests (issue 37, "kill etch where it writes"): the real `etch`
//! binary is SIGKILLed at many points where it writes (compaction, the
//! `write` and `edit` tools on a large file, `etch trust --yes`, `etch
//! hooks import --write`, `etch import pi`, `etch serve` running several
//! sessions at once), then nothing may be torn: every session loads
//! (`etch sessions`, `etch show`), resumes against the fake server and is
//! whole afterwards, every target file is wholly its old or wholly its
//! new content, and no temporary file is left beside it. A full disk
//! (`ulimit -f`) must fail the session log's write with an error naming
//! the file and leave the log valid up to its last complete line.
//!
//! Kill points are never a sleep that races: each scenario is a list of
//! observable stages (the fake server received a request, a gated reply
//! was released, the log grew, a file appeared or was replaced, a number
//! of bytes was read), and a seeded choice picks the stage at which the
//! process is killed, as soon as the test sees it. `ETCH_KILL_SEED`
//! changes the seed; a failure names the seed, the round and the stage.
//!
//! etch writes new files without a name first (`etch_fs`: `O_TMPFILE`)
//! and names them once whole, so a stage "while it writes" is seen in
//! `/proc/PID/fd`: an open file named `#INODE (deleted)` in the target's
//! directory.

#![allow(clippy::panic, clippy::unwrap_used)]

mod support;

use std::os::unix::fs::MetadataExt as _;

use base64::Engine as _;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use etch_test_support::{FakeServer, Reply, chat_text, chat_text_chunks, chat_tool_calls};
use serde_json::{Value, json};
use support::{Workspace, model_args};

/// How long any one stage may take before the test fails instead of
/// hanging.
const STAGE_DEADLINE: Duration = Duration::from_secs(60);

/// The name of the last stage of a command that ends by itself: it is
/// never killed, and the stages before it need not be seen.
const EXITED: &str = "the process exited";

/// A small seeded generator (SplitMix64): the same seed, the same kill
/// points.
struct Seeded(u64);

impl Seeded {
    /// The generator of test `name`: the default seed, or
    /// `ETCH_KILL_SEED`, mixed with the name so tests choose apart.
    fn for_test(name: &str) -> Self {
        let seed = std::env::var("ETCH_KILL_SEED")
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(37);
        let mixed = name.bytes().fold(seed ^ 0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        Self(mixed)
    }

    /// The next number.
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % u64::try_from(n).unwrap()).unwrap()
    }

    /// The stage round `round` kills at, of `stages`: each once, in
    /// turn, then seeded ones.
    fn stage(&mut self, round: usize, stages: usize) -> usize {
        if round < stages {
            round
        } else {
            self.below(stages)
        }
    }
}

/// The seed a failure message names.
fn seed_note() -> String {
    format!(
        "ETCH_KILL_SEED={}",
        std::env::var("ETCH_KILL_SEED").unwrap_or_else(|_| "37".to_owned())
    )
}

/// One observable point of a run: when `reached` holds, either the
/// process is killed there or `then` runs (opening a gate) and the run
/// goes on to the next stage.
struct Stage<'a> {
    /// Its name, for messages.
    name: &'static str,
    /// Whether the run got there.
    reached: Box<dyn FnMut() -> bool + 'a>,
    /// What the test does once the run passed it without a kill.
    then: Box<dyn FnMut() + 'a>,
}

impl<'a> Stage<'a> {
    /// A stage with nothing to do after it.
    fn new(name: &'static str, reached: impl FnMut() -> bool + 'a) -> Self {
        Self {
            name,
            reached: Box::new(reached),
            then: Box::new(|| {}),
        }
    }

    /// A stage after which the test does `then`.
    fn then(mut self, then: impl FnMut() + 'a) -> Self {
        self.then = Box::new(then);
        self
    }
}

/// A run of etch to be killed, its output kept in files outside the
/// workspace (so they are not mistaken for its files).
struct Victim {
    /// The process.
    child: Child,
    /// Where its stdout goes.
    out: PathBuf,
    /// Where its stderr goes.
    err: PathBuf,
    /// Holds those files.
    _dir: tempfile::TempDir,
}

impl Victim {
    /// Starts etch with `args` in `ws`, stdin closed.
    fn spawn(ws: &Workspace, args: &[String]) -> Self {
        Self::spawn_with(ws, args, Stdio::null())
    }

    /// Starts etch with `args` in `ws` and the given stdin.
    fn spawn_with(ws: &Workspace, args: &[String], stdin: Stdio) -> Self {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Self::start(ws.command(&args), stdin)
    }

    /// Starts `command` with the given stdin.
    fn start(mut command: Command, stdin: Stdio) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("stdout");
        let err = dir.path().join("stderr");
        let child = command
            .stdin(stdin)
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap();
        Self {
            child,
            out,
            err,
            _dir: dir,
        }
    }

    /// What it wrote to stdout so far.
    fn stdout(&self) -> String {
        std::fs::read_to_string(&self.out).unwrap_or_default()
    }

    /// What it wrote to stderr so far.
    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.err).unwrap_or_default()
    }

    /// Its process id.
    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Goes through `stages`, killing the process at stage `at`; see
    /// [`kill_at`].
    fn kill_at(&mut self, stages: Vec<Stage<'_>>, at: usize, round: &str) -> bool {
        let err = self.err.clone();
        kill_at(&mut self.child, stages, at, round, &|| {
            std::fs::read_to_string(&err).unwrap_or_default()
        })
    }
}

/// Goes through `stages`, killing `child` with SIGKILL as soon as stage
/// `at` is seen. Returns whether it was killed there (false: it exited by
/// itself first, which only a stage after its last write allows).
/// `stderr` tells what it said, for messages.
fn kill_at(
    child: &mut Child,
    stages: Vec<Stage<'_>>,
    at: usize,
    round: &str,
    stderr: &dyn Fn() -> String,
) -> bool {
    // Waiting for the exit, the stages before it need not be seen.
    let stages: Vec<Stage<'_>> = if stages[at].name == EXITED {
        stages.into_iter().skip(at).collect()
    } else {
        stages
    };
    let at = at.min(stages.len() - 1);
    for (index, mut stage) in stages.into_iter().enumerate() {
        let deadline = Instant::now() + STAGE_DEADLINE;
        loop {
            if (stage.reached)() {
                break;
            }
            if let Some(status) = child.try_wait().unwrap() {
                assert!(
                    index == at,
                    "{round}: etch exited ({status}) before stage {}; stderr: {}",
                    stage.name,
                    stderr()
                );
                return false;
            }
            assert!(
                Instant::now() < deadline,
                "{round}: stage {} not reached in {STAGE_DEADLINE:?}; stderr: {}",
                stage.name,
                stderr()
            );
            std::thread::sleep(Duration::from_micros(200));
        }
        if index == at {
            let _ = child.kill();
            let status = child.wait().unwrap();
            return status.signal() == Some(9);
        }
        (stage.then)();
    }
    panic!("{round}: no stage {at}");
}

impl Drop for Victim {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Bytes process `pid` has read so far (`rchar` of `/proc/PID/io`),
/// zero once it is gone.
fn bytes_read(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/io"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// The size of `path`, zero when it is missing.
fn size_of(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// The inode of `path`, zero when it is missing.
fn inode_of(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.ino())
}

/// The number of complete lines in `path`.
fn lines_in(path: &Path) -> usize {
    std::fs::read(path).map_or(0, |b| b.split(|c| *c == b'\n').count().saturating_sub(1))
}

/// Whether the last 64 KiB of `path` hold `needle` (the whole file
/// would cost too much to read between polls of a run).
fn tail_holds(path: &Path, needle: &str) -> bool {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(64 << 10)));
    let mut tail = Vec::new();
    let _ = file.read_to_end(&mut tail);
    String::from_utf8_lossy(&tail).contains(needle)
}

/// The sizes of the files being written in `dir` or below by process
/// `pid`: the unnamed ones it has open (`O_TMPFILE`: what `etch_fs`
/// writes before it names them), and named temporary files where the
/// filesystem makes no unnamed ones.
fn unnamed_files(pid: u32, dir: &Path) -> Vec<u64> {
    let mut sizes = open_unnamed(pid, dir);
    let mut named = Vec::new();
    find_files(dir, &|n| n.contains(".etch-tmp-"), &mut named);
    sizes.extend(named.iter().map(|p| size_of(p)));
    sizes
}

/// The sizes of the unnamed files process `pid` has open in `dir` or
/// below.
fn open_unnamed(pid: u32, dir: &Path) -> Vec<u64> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    fds.flatten()
        .filter_map(|fd| {
            let target = std::fs::read_link(fd.path()).ok()?;
            let target = target.to_string_lossy();
            let unnamed = Path::new(target.strip_suffix(" (deleted)")?);
            let name = unnamed.file_name()?.to_string_lossy();
            (name.starts_with('#') && unnamed.starts_with(&dir))
                .then(|| std::fs::metadata(fd.path()).map_or(0, |m| m.len()))
        })
        .collect()
}

/// Adds to `found` the files under `dir` (at any depth) whose names
/// `temp` accepts.
fn find_files(dir: &Path, temp: &dyn Fn(&str) -> bool, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            find_files(&path, temp, found);
        } else if temp(&name) {
            found.push(path);
        }
    }
}

/// Whether `name` is a temporary name: `.NAME.etch-tmp-PID-N` (what
/// `etch_fs` names a whole file for the instant before its rename, or
/// writes where a filesystem has no unnamed files), or a `.tmp` or
/// `.partial` that older etch wrote.
fn is_temp_name(name: &str) -> bool {
    name.contains(".etch-tmp-")
        || name.contains(".json.tmp-")
        || Path::new(name)
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("tmp") || e.eq_ignore_ascii_case("partial"))
}

/// The temporary files left in the workspace and its HOME.
fn temp_files(ws: &Workspace) -> Vec<PathBuf> {
    let mut found = Vec::new();
    find_files(ws.path(), &is_temp_name, &mut found);
    find_files(ws.home.path(), &is_temp_name, &mut found);
    found
}

/// Every line of the JSONL file `path` must be JSON, except a torn
/// last line (no newline after it: the write a kill interrupted) and the
/// fragments `earlier` (torn lines of an earlier kill, closed by a
/// newline since). Returns the torn last line, if any.
fn check_jsonl(path: &Path, earlier: &[Vec<u8>], round: &str) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).unwrap();
    let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let tail = lines.pop().unwrap_or_default();
    for (number, line) in lines.iter().enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) || earlier.iter().any(|e| e == line) {
            continue;
        }
        assert!(
            serde_json::from_slice::<Value>(line).is_ok(),
            "{round}: line {} of {} is torn or not JSON: {:?}",
            number + 1,
            path.display(),
            String::from_utf8_lossy(&line[..line.len().min(200)])
        );
    }
    (!tail.is_empty()).then(|| tail.to_vec())
}

/// `path` without the lines `torn` (fragments a kill left, closed by a
/// newline since), written beside `scratch` for `support::assert_whole`.
fn without_fragments(path: &Path, torn: &[Vec<u8>], scratch: &Path) -> PathBuf {
    let bytes = std::fs::read(path).unwrap();
    let kept: Vec<&[u8]> = bytes
        .split(|b| *b == b'\n')
        .filter(|line| !torn.iter().any(|t| t.as_slice() == *line))
        .collect();
    let copy = scratch.join(path.file_name().unwrap());
    std::fs::write(&copy, kept.join(&b'\n')).unwrap();
    copy
}

/// The id of session file `file`.
fn id_of(file: &Path) -> String {
    file.file_stem().unwrap().to_string_lossy().into_owned()
}

/// After a kill: `etch sessions` lists, every session shows and resumes
/// (`etch resume ID -p "go on"` against a fake server) and is whole
/// afterwards; no JSONL file is torn but in its last line, and no
/// temporary file is left. `allowed_temp` names a leftover a round may
/// meet (a kill in the instant between naming a file and its rename).
/// Returns how many logs
/// ended torn after the kill.
fn check_sessions(ws: &Workspace, round: &str, allowed_temp: &dyn Fn(&Path) -> bool) -> usize {
    let listed = ws.run(&["sessions"]);
    assert_eq!(
        listed.code(),
        0,
        "{round}: etch sessions: {}",
        listed.stderr()
    );
    let index = ws.sessions_dir().join("index.jsonl");
    if index.exists() {
        check_jsonl(&index, &[], round);
    }
    let files = ws.session_files();
    let mut torn = Vec::new();
    for file in &files {
        torn.push(check_jsonl(file, &[], round));
        let id = id_of(file);
        let show = ws.run(&["show", &id]);
        assert_eq!(show.code(), 0, "{round}: etch show {id}: {}", show.stderr());
    }
    let server = FakeServer::start(
        files
            .iter()
            .map(|_| Reply::sse(chat_text("resumed")))
            .collect(),
    )
    .unwrap();
    let scratch = tempfile::tempdir().unwrap();
    for (file, torn) in files.iter().zip(&torn) {
        let id = id_of(file);
        let resumed = ws.run_model(&server, &["resume", &id, "-p", "go on"], &[]);
        assert_eq!(
            resumed.code(),
            0,
            "{round}: etch resume {id}: {}",
            resumed.stderr()
        );
        assert_eq!(resumed.stdout(), "resumed\n", "{round}: resume {id}");
        let torn: Vec<Vec<u8>> = torn.iter().cloned().collect();
        assert!(
            check_jsonl(file, &torn, round).is_none(),
            "{round}: {} ends torn after a resume",
            file.display()
        );
        support::assert_whole(&without_fragments(file, &torn, scratch.path()));
    }
    // Where there are no unnamed files, a kill may leave a named one.
    let fallback = !etch_fs::makes_unnamed_files(ws.path());
    let left: Vec<PathBuf> = temp_files(ws)
        .into_iter()
        .filter(|p| !allowed_temp(p))
        .filter(|p| !(fallback && p.to_string_lossy().contains(".etch-tmp-")))
        .collect();
    assert!(left.is_empty(), "{round}: temporary files left: {left:?}");
    torn.iter().flatten().count()
}

/// No leftover is allowed.
fn no_temp(_: &Path) -> bool {
    false
}

/// Copies the files under `from` to `to`, replacing in text files each
/// first path of `paths` by its second (a session names its directory).
fn copy_tree(from: &Path, to: &Path, paths: &[(String, String)]) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target, paths);
            continue;
        }
        let bytes = std::fs::read(entry.path()).unwrap();
        let bytes = match String::from_utf8(bytes) {
            Ok(mut text) => {
                for (old, new) in paths {
                    text = text.replace(old.as_str(), new);
                }
                text.into_bytes()
            }
            Err(e) => e.into_bytes(),
        };
        std::fs::write(&target, bytes).unwrap();
        let mode = entry.metadata().unwrap().permissions();
        std::fs::set_permissions(&target, mode).unwrap();
    }
}

/// A new workspace holding a copy of `template`'s files and HOME, its
/// paths rewritten: a session set up once, killed many times.
fn clone_workspace(template: &Workspace) -> Workspace {
    let ws = Workspace::new();
    let paths = [
        (
            template.path().display().to_string(),
            ws.path().display().to_string(),
        ),
        (
            template.home.path().display().to_string(),
            ws.home.path().display().to_string(),
        ),
    ];
    copy_tree(template.path(), ws.path(), &paths);
    copy_tree(template.home.path(), ws.home.path(), &paths);
    ws
}

/// `args` as owned strings after the flags that point etch at `server`.
fn with_model(server: &FakeServer, args: &[&str]) -> Vec<String> {
    let mut all = model_args(server);
    all.extend(args.iter().map(|a| (*a).to_owned()));
    all
}

/// A reply that sends the first of `frames` and holds the rest until
/// `gate` exists.
fn gated(frames: Vec<String>, gate: &Path) -> Reply {
    let mut events = frames;
    let rest = events.split_off(1);
    Reply::Gated {
        events,
        gate: gate.to_path_buf(),
        rest,
    }
}

/// A reply that starts an answer and never finishes it (its gate is
/// never opened): the run stays alive until it is killed.
fn never(gate: &Path) -> Reply {
    gated(chat_text("still thinking"), gate)
}

/// Creates the gate file `gate`.
fn open_gate(gate: &Path) {
    std::fs::write(gate, "").unwrap();
}

/// Distinct lines of about `size` bytes in all, each naming its number
/// and `word`.
fn big_text(word: &str, size: usize) -> String {
    use std::fmt::Write as _;
    let mut text = String::with_capacity(size + 64);
    let mut i = 0;
    while text.len() < size {
        let _ = writeln!(text, "{word} line {i:07} of a large file to be replaced");
        i += 1;
    }
    text
}

// ---------------------------------------------------------------------
// 2. The write and edit tools on a large file.
// ---------------------------------------------------------------------

/// The names of the stages of a tool run on a large file.
const TOOL_STAGES: [&str; 6] = [
    "the model request arrived (its answer's first part sent, the rest held)",
    "the log grew past the prompt (the call being logged)",
    "the new content being written (an unnamed file beside the target), or replaced",
    "the target was replaced",
    "the tool result was logged",
    "the next model request arrived",
];

/// One round: etch runs `write` (or `edit`) on a 2 MB `big.txt` and is
/// killed at stage `at`; `big.txt` must be wholly old or wholly new.
fn tool_round(edit: bool, at: usize, round: &str) {
    let ws = Workspace::new();
    let gates = tempfile::tempdir().unwrap();
    let release = gates.path().join("release");
    let target = ws.path().join("big.txt");
    let old = big_text("old", 2 << 20);
    std::fs::write(&target, &old).unwrap();
    let (new, arguments) = if edit {
        let needle = "old line 0012345 of a large file to be replaced\n";
        let replacement = "new line 0012345, edited\n";
        (
            old.replacen(needle, replacement, 1),
            json!({"path": "big.txt", "edits": [{"oldText": needle, "newText": replacement}]}),
        )
    } else {
        // A few lines changed all over the file: the result's diff stays
        // cheap (a wholly different 4 MB file took a debug build over a minute
        // to diff, after the rename).
        let mut new = String::with_capacity(old.len());
        for (i, line) in old.split_inclusive('\n').enumerate() {
            if i % 9973 == 17 {
                new.push_str(&line.replacen("old", "new", 1));
            } else {
                new.push_str(line);
            }
        }
        let arguments = json!({"path": "big.txt", "content": new});
        (new, arguments)
    };
    let name = if edit { "edit" } else { "write" };
    let call = chat_tool_calls(&[("call_big", name, &arguments.to_string())]);
    let server = FakeServer::start(vec![
        gated(call, &release),
        never(&gates.path().join("never")),
    ])
    .unwrap();
    let mut victim = Victim::spawn(&ws, &with_model(&server, &["-p", "rewrite big.txt"]));
    let pid = victim.pid();
    let old_inode = inode_of(&target);
    let logged = std::cell::Cell::new(0u64);
    let log = || ws.session_files().first().cloned();
    let stages = vec![
        Stage::new(TOOL_STAGES[0], || !server.requests().is_empty()).then(|| {
            logged.set(log().map_or(0, |l| size_of(&l)));
            open_gate(&release);
        }),
        Stage::new(TOOL_STAGES[1], || {
            log().is_some_and(|l| size_of(&l) > logged.get())
        }),
        Stage::new(TOOL_STAGES[2], || {
            let mut found = Vec::new();
            find_files(ws.path(), &|n| n.contains(".etch-tmp-"), &mut found);
            !unnamed_files(pid, ws.path()).is_empty()
                || !found.is_empty()
                || inode_of(&target) != old_inode
        }),
        Stage::new(TOOL_STAGES[3], || inode_of(&target) != old_inode),
        Stage::new(TOOL_STAGES[4], || {
            log().is_some_and(|l| tail_holds(&l, "\"type\":\"message.tool\""))
        }),
        Stage::new(TOOL_STAGES[5], || server.requests().len() >= 2),
    ];
    let killed = victim.kill_at(stages, at, round);
    assert!(killed, "{round}: etch was not killed");
    let now = std::fs::read(&target).unwrap();
    assert!(
        now == old.as_bytes() || now == new.as_bytes(),
        "{round}: big.txt is torn: {} bytes, neither the old {} nor the new {}",
        now.len(),
        old.len(),
        new.len()
    );
    // The bytes go into an unnamed file that is named only just before
    // the rename: a kill in those microseconds, which the temp-file stage
    // aims at when it sees the name, leaves it; a kill anywhere else
    // leaves nothing.
    let in_the_window = |path: &Path| {
        at == 2
            && path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".big.txt.etch-tmp-"))
    };
    check_sessions(&ws, round, &in_the_window);
}

/// `write` and `edit` of a 2 MB file killed at every stage of the run
/// (seeded): the file is wholly old or wholly new, never torn or empty,
/// no temp file is left beside it but by a kill in the microseconds
/// between its naming and the rename (before cb48864 a kill while the
/// temp file was filled left `.big.txt.etch-tmp-PID-N` for good), and
/// the session loads and resumes.
#[test]
fn write_and_edit_of_a_large_file_survive_a_kill() {
    let mut seeded = Seeded::for_test("tools");
    for round in 0..30 {
        let edit = round % 2 == 1;
        let at = if round < TOOL_STAGES.len() * 2 {
            round / 2
        } else {
            seeded.below(TOOL_STAGES.len())
        };
        let name = format!(
            "{} round {round}, killed at \"{}\" ({})",
            if edit { "edit" } else { "write" },
            TOOL_STAGES[at],
            seed_note()
        );
        tool_round(edit, at, &name);
    }
}

// ---------------------------------------------------------------------
// 1. Compaction: `etch compact`, the RPC `compact` command, automatic.
// ---------------------------------------------------------------------

/// The project settings of the compaction rounds: compaction keeps only
/// the last message, no retries; `auto` adds automatic compaction at a
/// threshold every request of a long session reaches.
fn compaction_config(auto: bool) -> String {
    let mut text = String::from(
        "[context]\nkeep_recent_tokens = 0\n[session]\nkeep_messages = 1\n[provider]\nmax_retries = 0\n",
    );
    if auto {
        text = text.replace(
            "[context]\n",
            "[context]\nauto_compact = true\nauto_compact_threshold_tokens = 1000\n",
        );
    }
    text
}

/// A session of two long exchanges (1.2 MB of answers: more than the
/// summary, or compaction skips), so there is something to compact; its
/// log file.
fn long_session(ws: &Workspace) -> PathBuf {
    // No usage chunk: the fake's fixed token counts would call these
    // long exchanges tiny, so the estimate measures the messages.
    let answer = || {
        let mut frames = chat_text_chunks(&"a long answer ".repeat(45_000), 64 << 10);
        frames.retain(|f| !f.contains("\"prompt_tokens\""));
        Reply::sse(frames)
    };
    let server = FakeServer::start(vec![answer(), answer()]).unwrap();
    let prompt = "please explain the whole codebase ".repeat(100);
    ws.run_model(&server, &["-p", &prompt], &[]).ok();
    let id = id_of(&ws.only_session());
    ws.run_model(&server, &["resume", &id, "-p", "and the tests too"], &[])
        .ok();
    ws.only_session()
}

/// A summary of about `size` bytes, streamed in 64 KB pieces: its log
/// line is large enough for a kill to land while it is written.
fn big_summary(size: usize) -> Vec<String> {
    let mut text = String::from("## Goal\nExplain the codebase.\n## Progress\n");
    text.push_str(&"- read one more module and noted what it does\n".repeat(size / 46));
    chat_text_chunks(&text, 64 << 10)
}

/// How a round compacts.
#[derive(Clone, Copy, Debug)]
enum Compaction {
    /// `etch compact --session ID`.
    Manual,
    /// The RPC `compact` command of `etch rpc --session ID`.
    Rpc,
    /// `etch resume ID -p ...` with `[context] auto_compact`.
    Auto,
}

/// The stages of a compaction round.
const COMPACT_STAGES: [&str; 5] = [
    "the summary request arrived (its first part sent, the rest held)",
    "the log grew (the summary request's usage)",
    "the log grew by 16 KB (the summary line being written)",
    "the summary line was complete",
    "the next model request arrived",
];

/// The size of the summary text of every compaction round.
const SUMMARY_BYTES: usize = 512 << 10;

/// Whether the file at `path` ends with a newline.
fn ends_with_newline(path: &Path) -> bool {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let mut last = [0u8];
    file.seek(SeekFrom::End(-1)).is_ok() && file.read_exact(&mut last).is_ok() && last[0] == b'\n'
}

/// One round: a long session is compacted the way `how` says and etch is
/// killed at stage `at`. Returns whether it was killed (a manual
/// compaction may exit before its last stage is seen).
fn compaction_round(template: &Workspace, how: Compaction, at: usize, round: &str) -> bool {
    let ws = clone_workspace(template);
    let log = ws.only_session();
    let id = id_of(&log);
    if matches!(how, Compaction::Auto) {
        ws.project_config(&compaction_config(true));
    }
    let gates = tempfile::tempdir().unwrap();
    let release = gates.path().join("release");
    let server = FakeServer::start(vec![
        gated(big_summary(SUMMARY_BYTES), &release),
        never(&gates.path().join("never")),
    ])
    .unwrap();
    let mut victim = match how {
        Compaction::Manual => {
            Victim::spawn(&ws, &with_model(&server, &["compact", "--session", &id]))
        }
        Compaction::Rpc => Victim::spawn_with(
            &ws,
            &[
                &["rpc", "--session", &id][..],
                &with_model(&server, &[])
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>(),
            ]
            .concat()
            .iter()
            .map(|a| (*a).to_owned())
            .collect::<Vec<_>>(),
            Stdio::piped(),
        ),
        Compaction::Auto => Victim::spawn(
            &ws,
            &with_model(&server, &["resume", &id, "-p", "and the docs?"]),
        ),
    };
    let stdin = std::cell::RefCell::new(victim.child.stdin.take());
    let send = |command: Value| {
        use std::io::Write as _;
        if let Some(stdin) = stdin.borrow_mut().as_mut() {
            let _ = writeln!(stdin, "{command}");
            let _ = stdin.flush();
        }
    };
    if matches!(how, Compaction::Rpc) {
        send(json!({"id": "c", "type": "compact"}));
    }
    let before = std::cell::Cell::new(0u64);
    let mut stages = vec![
        Stage::new(COMPACT_STAGES[0], || !server.requests().is_empty()).then(|| {
            before.set(size_of(&log));
            open_gate(&release);
        }),
        Stage::new(COMPACT_STAGES[1], || size_of(&log) > before.get()),
        Stage::new(COMPACT_STAGES[2], || {
            size_of(&log) > before.get() + (16 << 10)
        }),
        Stage::new(COMPACT_STAGES[3], || {
            size_of(&log) > before.get() + SUMMARY_BYTES as u64 && ends_with_newline(&log)
        })
        .then(|| {
            if matches!(how, Compaction::Rpc) {
                send(json!({"id": "p", "type": "prompt", "message": "and the docs?"}));
            }
        }),
    ];
    if !matches!(how, Compaction::Manual) {
        stages.push(Stage::new(COMPACT_STAGES[4], || {
            server.requests().len() >= 2
        }));
    }
    let killed = victim.kill_at(stages, at, round);
    assert!(
        killed || matches!(how, Compaction::Manual) && at > 0,
        "{round}: etch was not killed; stdout: {}; stderr: {}",
        victim.stdout(),
        victim.stderr()
    );
    let summaries = std::fs::read_to_string(&log)
        .unwrap()
        .matches("\"type\":\"context.summary\"")
        .count();
    assert!(summaries <= 1, "{round}: {summaries} summaries logged");
    // The resume that checks the session must not compact again.
    ws.project_config(&compaction_config(false));
    let torn = check_sessions(&ws, round, &no_temp);
    eprintln!("{round}: killed {killed}, torn lines {torn}");
    killed
}

/// Manual (`etch compact`), RPC (`compact`) and automatic compaction of a
/// long session with a 1 MB summary, killed at every stage (seeded): the
/// log stays valid (at most its last line torn), loads and resumes.
#[test]
fn compaction_survives_a_kill() {
    let mut seeded = Seeded::for_test("compaction");
    let template = Workspace::new();
    template.project_config(&compaction_config(false));
    long_session(&template);
    let mut kills = 0;
    for round in 0..24 {
        let how = [Compaction::Manual, Compaction::Rpc, Compaction::Auto][round % 3];
        let stages = if matches!(how, Compaction::Manual) {
            4
        } else {
            5
        };
        let at = if round < 15 {
            (round / 3) % stages
        } else {
            seeded.below(stages)
        };
        let name = format!(
            "{how:?} compaction round {round}, killed at \"{}\" ({})",
            COMPACT_STAGES[at],
            seed_note()
        );
        kills += usize::from(compaction_round(&template, how, at, &name));
    }
    eprintln!("compaction: {kills} of 24 rounds killed");
    assert!(kills >= 16, "only {kills} of 24 rounds were killed");
}

// ---------------------------------------------------------------------
// 3. Config writes: `etch trust --yes`, `etch hooks import --write`.
// ---------------------------------------------------------------------

/// The stages of an `etch trust --yes` round.
const TRUST_STAGES: [&str; 4] = [
    "the process started",
    "the pinned 8 MB script was read (being hashed)",
    "trust.json being written (an unnamed file in ~/.etch), or replaced",
    "trust.json was replaced",
];

/// A trust file of `n` other projects, as etch writes it.
fn trust_file(n: usize) -> String {
    let projects: serde_json::Map<String, Value> = (0..n)
        .map(|i| {
            (
                format!("/elsewhere/project-{i}/.etch/config.toml"),
                json!({"hash": format!("{i:064x}")}),
            )
        })
        .collect();
    serde_json::to_string_pretty(&json!({"version": 1, "projects": projects})).unwrap()
}

/// One round: `etch trust --yes` in a project whose hook pins an 8 MB
/// script, with a trust file of 5000 other projects, killed at stage
/// `at`: `trust.json` is wholly the old file or the new one (every old
/// project and this one), and `etch trust` reads it. Returns whether it
/// was killed.
fn trust_round(at: usize, round: &str) -> bool {
    let ws = Workspace::new();
    ws.project_config(
        "[[hooks.PreToolUse]]\nmatcher = \"bash\"\ncommand = \"sh scripts/guard.sh\"\n",
    );
    std::fs::create_dir_all(ws.path().join("scripts")).unwrap();
    let mut guard = String::from("#!/bin/sh\nexit 0\n");
    guard.push_str(
        &"# a long comment that pads the script to make hashing it take a while\n".repeat(120_000),
    );
    std::fs::write(ws.path().join("scripts/guard.sh"), &guard).unwrap();
    let store = ws.home.path().join(".etch/trust.json");
    std::fs::create_dir_all(store.parent().unwrap()).unwrap();
    let old = trust_file(5000);
    std::fs::write(&store, &old).unwrap();
    let old_inode = inode_of(&store);
    let mut victim = Victim::spawn(&ws, &["trust".to_owned(), "--yes".to_owned()]);
    let pid = victim.pid();
    let etch_home = store.parent().unwrap().to_path_buf();
    let guard_len = guard.len() as u64;
    let stages = vec![
        Stage::new(TRUST_STAGES[0], || true),
        Stage::new(TRUST_STAGES[1], || bytes_read(pid) >= guard_len),
        Stage::new(TRUST_STAGES[2], || {
            !unnamed_files(pid, &etch_home).is_empty() || inode_of(&store) != old_inode
        }),
        Stage::new(TRUST_STAGES[3], || inode_of(&store) != old_inode),
    ];
    let killed = victim.kill_at(stages, at, round);
    let now = std::fs::read_to_string(&store).unwrap();
    let key = ws.path().join(".etch/config.toml").display().to_string();
    let trusted = if now == old {
        false
    } else {
        let parsed: Value = serde_json::from_str(&now)
            .unwrap_or_else(|e| panic!("{round}: trust.json is torn ({e}), {} bytes", now.len()));
        let projects = parsed["projects"].as_object().unwrap();
        assert_eq!(projects.len(), 5001, "{round}: trust.json lost projects");
        assert!(projects.contains_key(&key), "{round}: {now:.200}");
        true
    };
    let listed = ws.run(&["trust"]);
    let said = listed.ok();
    let expected = if trusted { "(trusted)" } else { "(not trusted" };
    assert!(said.contains(expected), "{round}: etch trust says {said}");
    check_sessions(&ws, round, &no_temp);
    killed
}

/// The stages of an `etch hooks import --write` round.
const HOOKS_STAGES: [&str; 4] = [
    "the process started",
    "the Claude settings were read (being converted)",
    "the project config was replaced (it grew)",
    EXITED,
];

/// Claude Code settings with `n` command hooks.
fn claude_settings(n: usize) -> String {
    let hooks: Vec<Value> = (0..n)
        .map(|i| {
            json!({"matcher": "Bash", "hooks": [{"type": "command", "command": format!("./hooks/check-{i}.sh --strict")}]})
        })
        .collect();
    json!({"hooks": {"PreToolUse": hooks}}).to_string()
}

/// The project config a hooks round starts from.
const HOOKS_CONFIG: &str = "[[hooks.PreToolUse]]\nmatcher = \"bash\"\ncommand = \"true\"\n";

/// A workspace with a project config and Claude settings of `hooks`
/// hooks (each about 120 bytes of TOML once imported).
fn hooks_workspace(hooks: usize) -> Workspace {
    let ws = Workspace::new();
    ws.project_config(HOOKS_CONFIG);
    std::fs::create_dir_all(ws.path().join(".claude")).unwrap();
    std::fs::write(
        ws.path().join(".claude/settings.json"),
        claude_settings(hooks),
    )
    .unwrap();
    ws
}

/// One round: `etch hooks import --write` killed at stage `at`;
/// `.etch/config.toml` must be wholly `HOOKS_CONFIG` or wholly `new`
/// (what an uninterrupted import writes), and load. Returns whether it
/// was killed.
fn hooks_round(hooks: usize, new: &str, at: usize, round: &str) -> bool {
    let ws = hooks_workspace(hooks);
    let config = ws.path().join(".etch/config.toml");
    let settings_len = size_of(&ws.path().join(".claude/settings.json"));
    let args: Vec<String> = ["hooks", "import", "--write"].map(str::to_owned).to_vec();
    let mut victim = Victim::spawn(&ws, &args);
    let pid = victim.pid();
    let stages = vec![
        Stage::new(HOOKS_STAGES[0], || true),
        Stage::new(HOOKS_STAGES[1], || bytes_read(pid) >= settings_len),
        Stage::new(HOOKS_STAGES[2], || {
            size_of(&config) > HOOKS_CONFIG.len() as u64
        }),
        Stage::new(EXITED, || false),
    ];
    let killed = victim.kill_at(stages, at, round);
    let now = std::fs::read_to_string(&config).unwrap();
    assert!(
        now == HOOKS_CONFIG || now == new,
        "{round}: .etch/config.toml is torn: {} bytes, neither the old {} nor the new {}; it ends {:?}",
        now.len(),
        HOOKS_CONFIG.len(),
        new.len(),
        &now[now.len().saturating_sub(80)..]
    );
    let check = ws.run(&["config", "check"]);
    assert_eq!(
        check.code(),
        0,
        "{round}: etch config check: {}",
        check.stderr()
    );
    check_sessions(&ws, round, &no_temp);
    killed
}

/// What `etch hooks import --write` of `hooks` hooks writes when nothing
/// stops it.
fn imported_hooks_config(hooks: usize) -> String {
    let ws = hooks_workspace(hooks);
    ws.run(&["hooks", "import", "--write"]).ok();
    std::fs::read_to_string(ws.path().join(".etch/config.toml")).unwrap()
}

/// `etch trust --yes` and `etch hooks import --write` killed at their
/// stages (seeded): `trust.json` and `.etch/config.toml` are wholly old
/// or wholly new and load, and no temporary file is left.
#[test]
fn config_writes_survive_a_kill() {
    let mut seeded = Seeded::for_test("config");
    // Loading a config of thousands of hooks takes a debug build long
    // (about 0.3 ms a hook): 1000 keep the rounds short.
    let new = imported_hooks_config(1000);
    let mut kills = 0;
    let mut rounds = 0;
    for round in 0..8 {
        let at = seeded.stage(round, TRUST_STAGES.len());
        let name = format!(
            "trust round {round}, killed at \"{}\" ({})",
            TRUST_STAGES[at],
            seed_note()
        );
        kills += usize::from(trust_round(at, &name));
        rounds += 1;
    }
    for round in 0..8 {
        let at = seeded.stage(round, HOOKS_STAGES.len());
        let name = format!(
            "hooks import round {round}, killed at \"{}\" ({})",
            HOOKS_STAGES[at],
            seed_note()
        );
        kills += usize::from(hooks_round(1000, &new, at, &name));
        rounds += 1;
    }
    eprintln!("config writes: {kills} of {rounds} rounds killed");
    // Those killed at once (stage 0) at least; a later stage may see the
    // command finish first, which leaves the files new.
    assert!(kills >= 4, "only {kills} of {rounds} rounds were killed");
}

/// `etch hooks import --write` of 20,000 hooks killed as soon as the
/// config changed: it was once appended in place, and a kill then left a
/// torn TOML file every later etch command in the project failed on.
#[test]
fn a_kill_during_hooks_import_leaves_the_config_whole() {
    let new = imported_hooks_config(20_000);
    for round in 0..3 {
        hooks_round(
            20_000,
            &new,
            2,
            &format!("hooks import round {round}, killed once the config grew"),
        );
    }
}

// ---------------------------------------------------------------------
// 4. `etch import pi`.
// ---------------------------------------------------------------------

/// The number of exchanges in the Pi session the import rounds use.
const PI_EXCHANGES: usize = 1500;

/// Writes a Pi session (format v3) of `PI_EXCHANGES` exchanges, two of
/// its prompts with an image, for the project `cwd`; its path.
fn pi_file(dir: &Path, cwd: &Path) -> PathBuf {
    use std::fmt::Write as _;
    let at = "2026-02-03T04:05:06.000Z";
    let images = [(32, 16), (16, 32)].map(|(w, h)| {
        base64::engine::general_purpose::STANDARD
            .encode(etch_image::sample(w, h, etch_model::MediaType::Png).unwrap())
    });
    let mut text = String::new();
    let header =
        json!({"type": "session", "version": 3, "id": "pi-kill-1", "timestamp": at, "cwd": cwd});
    let _ = writeln!(text, "{header}");
    let mut parent: Option<String> = None;
    for i in 0..PI_EXCHANGES {
        let (user, assistant) = (format!("u{i}"), format!("a{i}"));
        let mut content =
            vec![json!({"type": "text", "text": format!("question {i}: {}", "why ".repeat(40))})];
        if i == 10 || i == PI_EXCHANGES / 2 {
            let image = &images[usize::from(i != 10)];
            content.push(json!({"type": "image", "data": image, "mimeType": "image/png"}));
        }
        let prompt = json!({"type": "message", "id": user, "parentId": parent, "timestamp": at,
            "message": {"role": "user", "content": content}});
        let answer = json!({"type": "message", "id": assistant, "parentId": user, "timestamp": at,
            "message": {"role": "assistant", "provider": "openai", "api": "openai-completions",
            "model": "m1", "stopReason": "stop",
            "content": [{"type": "text", "text": format!("answer {i}: {}", "because ".repeat(40))}]}});
        let _ = writeln!(text, "{prompt}\n{answer}");
        parent = Some(assistant);
    }
    let path = dir.join("pi-session.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

/// The stages of an import round; the third is a seeded size.
const IMPORT_STAGES: [&str; 5] = [
    "the session file was opened, without a name",
    "an image was stored in the assets",
    "the unnamed session file grew past a seeded size",
    "the session file got its name (the import is whole)",
    EXITED,
];

/// The images stored in the assets of the sessions of `ws`.
fn stored_images(ws: &Workspace) -> usize {
    let Ok(entries) = std::fs::read_dir(ws.sessions_dir()) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "assets"))
        .filter_map(|e| std::fs::read_dir(e.path()).ok())
        .map(Iterator::count)
        .sum()
}

/// One round: `etch import pi` of a 3000-entry Pi session killed at stage
/// `at` (once the unnamed file holds `bytes` at stage 2). Then the
/// sessions load and resume, and no temporary file is left; a session
/// is there only if the import was whole, and importing the file again
/// imports it (all of it) only if none is. Returns whether it was
/// killed.
fn import_round(at: usize, bytes: u64, round: &str) -> bool {
    let ws = Workspace::new();
    let pi_dir = tempfile::tempdir().unwrap();
    let file = pi_file(pi_dir.path(), ws.path());
    let args = vec![
        "import".to_owned(),
        "pi".to_owned(),
        file.display().to_string(),
    ];
    let mut victim = Victim::spawn(&ws, &args);
    let pid = victim.pid();
    let sessions = ws.path().join(".etch");
    let unnamed = || unnamed_files(pid, &sessions);
    let stages = vec![
        Stage::new(IMPORT_STAGES[0], || !unnamed().is_empty()),
        Stage::new(IMPORT_STAGES[1], || stored_images(&ws) > 0),
        Stage::new(IMPORT_STAGES[2], || {
            unnamed().iter().any(|size| *size >= bytes)
        }),
        Stage::new(IMPORT_STAGES[3], || !ws.session_files().is_empty()),
        Stage::new(EXITED, || false),
    ];
    let killed = victim.kill_at(stages, at, round);
    drop(victim);
    // The header and two events an exchange, each on a line.
    let expected = 1 + 2 * PI_EXCHANGES;
    let whole = ws.session_files().len() == 1;
    assert!(
        whole || ws.session_files().is_empty(),
        "{round}: sessions {:?}",
        ws.session_files()
    );
    if whole {
        assert_eq!(lines_in(&ws.session_files()[0]), expected, "{round}");
    }
    check_sessions(&ws, round, &no_temp);
    let again = ws.run(&["import", "pi", &file.display().to_string()]);
    assert_eq!(again.code(), 0, "{round}: import again: {}", again.stderr());
    let said = again.stdout();
    if whole {
        assert!(
            said.starts_with("skipped "),
            "{round}: import again: {said}"
        );
    } else {
        assert!(
            said.starts_with("imported "),
            "{round}: import again: {said}"
        );
    }
    let files = ws.session_files();
    assert_eq!(files.len(), 1, "{round}: sessions {files:?}");
    if !whole {
        assert_eq!(lines_in(&files[0]), expected, "{round}");
    }
    // A kill before the session was named can leave the images it
    // stored in a directory no session refers to; the session has its
    // own.
    let assets = std::fs::read_dir(files[0].with_extension("assets")).unwrap();
    assert_eq!(assets.count(), 2, "{round}: images stored");
    killed
}

/// `etch import pi` of a Pi session of 3000 entries and two images,
/// killed when its session file is opened, once an image is stored,
/// after a seeded number of bytes, once the session is named, or not at
/// all: an import is wholly there or not at all (a kill before it ends
/// leaves nothing, and the next import does it all), every session loads
/// and resumes, and no temporary file is left.
#[test]
fn pi_import_survives_a_kill() {
    let mut seeded = Seeded::for_test("import");
    let mut kills = 0;
    for round in 0..12 {
        // Every stage first, then mostly the seeded sizes.
        let at = if round < IMPORT_STAGES.len() {
            round
        } else {
            2
        };
        // Between the first image (entry 22) and the end (some 1.5 MB).
        let bytes = 30_000 + u64::try_from(seeded.below(1_000_000)).unwrap();
        let name = format!(
            "import round {round}, killed at \"{}\" ({bytes} bytes) ({})",
            IMPORT_STAGES[at],
            seed_note()
        );
        kills += usize::from(import_round(at, bytes, &name));
    }
    eprintln!("import: {kills} of 12 rounds killed");
    assert!(kills >= 10, "only {kills} of 12 rounds were killed");
}

// ---------------------------------------------------------------------
// 5. `etch serve` running several sessions at once.
// ---------------------------------------------------------------------

/// The sessions each serve round runs at once.
const SERVED: usize = 3;

/// The stages of a serve round: each request the fake server got, then
/// every run answered.
const SERVE_STAGES: [&str; SERVED * 2 + 1] = [
    "request 1 arrived",
    "request 2 arrived",
    "request 3 arrived",
    "request 4 arrived",
    "request 5 arrived",
    "request 6 arrived",
    "every run's answer was logged",
];

/// One round: `etch serve` runs a prompt in each of three sessions at
/// once (an `ls` call, then a 256 KB answer) and is killed at stage
/// `at`; then every session loads and resumes.
fn serve_round(at: usize, round: &str) {
    let ws = Workspace::new();
    let mut replies: Vec<Reply> = (0..SERVED)
        .map(|i| {
            let id = format!("call_ls_{i}");
            Reply::sse(chat_tool_calls(&[(id.as_str(), "ls", r#"{"path":"."}"#)]))
        })
        .collect();
    replies.extend((0..SERVED).map(|i| {
        let answer = format!(
            "served answer {i}: {}",
            "a long served answer ".repeat(13_000)
        );
        Reply::sse(chat_text_chunks(&answer, 64 << 10))
    }));
    let server = FakeServer::start(replies).unwrap();
    let args = model_args(&server);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut serve = support::serve::Serve::start(&ws, &args);
    let ids: Vec<String> = (0..SERVED).map(|_| serve.create()).collect();
    for id in &ids {
        let sent = serve.prompt(id, r#"{"message":"list the files, then explain"}"#);
        assert_eq!(sent.status, 202, "{round}: {}", sent.body);
    }
    let logs: Vec<PathBuf> = ids
        .iter()
        .map(|id| ws.sessions_dir().join(format!("{id}.jsonl")))
        .collect();
    let server = &server;
    let mut stages: Vec<Stage<'_>> = (0..SERVED * 2)
        .map(|n| Stage::new(SERVE_STAGES[n], move || server.requests().len() > n))
        .collect();
    stages.push(Stage::new(SERVE_STAGES[SERVED * 2], || {
        logs.iter()
            .all(|l| tail_holds(l, "\"stopReason\":\"stop\""))
    }));
    let killed = kill_at(&mut serve.child, stages, at, round, &String::new);
    assert!(killed, "{round}: etch serve was not killed");
    drop(serve);
    check_sessions(&ws, round, &no_temp);
}

/// `etch serve` killed while three sessions run at once, after each of
/// their model requests or once every answer is logged (seeded): every
/// session loads, shows and resumes, nothing is torn but a last line.
#[test]
fn serve_survives_a_kill_during_concurrent_runs() {
    let mut seeded = Seeded::for_test("serve");
    for round in 0..12 {
        let at = seeded.stage(round, SERVE_STAGES.len());
        let name = format!(
            "serve round {round}, killed at \"{}\" ({})",
            SERVE_STAGES[at],
            seed_note()
        );
        serve_round(at, &name);
    }
}

// ---------------------------------------------------------------------
// 6. A full disk: `ulimit -f` (SIGXFSZ ignored, so a write fails with
//    EFBIG as on a full disk).
// ---------------------------------------------------------------------

/// The bytes in one block of `sh`'s `ulimit -f` (512 in dash, 1024 in
/// bash), read back from the limit it sets.
fn ulimit_block() -> u64 {
    let out = Command::new("sh")
        .args([
            "-c",
            "ulimit -S -f 4; grep 'Max file size' /proc/self/limits",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let soft: u64 = text
        .split_whitespace()
        .nth(3)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no file size limit in {text:?}"));
    soft / 4
}

/// `etch ARGS` in `ws` run by `sh`, with SIGXFSZ ignored and a soft file
/// size limit of `bytes` (rounded up to whole blocks), as `ws.command`
/// would run it otherwise.
fn limited(ws: &Workspace, bytes: u64, args: &[String]) -> Command {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let etch = ws.command(&args);
    let blocks = bytes.div_ceil(ulimit_block());
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -S -f {blocks}; exec \"$0\" \"$@\""
        ))
        .arg(etch.get_program())
        .args(etch.get_args())
        .current_dir(ws.path())
        .stdin(Stdio::null());
    for (key, value) in etch.get_envs() {
        match value {
            Some(value) => sh.env(key, value),
            None => sh.env_remove(key),
        };
    }
    sh
}

/// A session of one short exchange; its log.
fn short_session(ws: &Workspace) -> PathBuf {
    let server = FakeServer::start(vec![Reply::sse(chat_text("first answer"))]).unwrap();
    ws.run_model(&server, &["-p", "a first question"], &[]).ok();
    ws.only_session()
}

/// One round: `etch resume ID -p` (or `etch compact`) with the session
/// log allowed to grow `room` bytes: the write that does not fit fails
/// with an error naming the log, etch exits 1 without a panic, the log is
/// valid up to its last complete line, and once there is room the
/// session loads and resumes.
fn disk_full_round(room: u64, compact: bool, round: &str) {
    let ws = Workspace::new();
    if compact {
        ws.project_config(&compaction_config(false));
        long_session(&ws);
    } else {
        short_session(&ws);
    }
    let log = ws.only_session();
    let id = id_of(&log);
    let before = size_of(&log);
    let answer = format!("a long answer: {}", "words ".repeat(10_000));
    let server = FakeServer::start(vec![Reply::sse(chat_text_chunks(&answer, 4096))]).unwrap();
    let args = if compact {
        with_model(&server, &["compact", "--session", &id])
    } else {
        with_model(&server, &["resume", &id, "-p", "a second question"])
    };
    let limit = before + room;
    let out = limited(&ws, limit, &args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{round}: {stderr}");
    assert_eq!(out.status.code(), Some(1), "{round}: {stderr}");
    assert!(
        stderr.contains(&log.display().to_string()) && stderr.contains("File too large"),
        "{round}: the error names neither the log nor the failure: {stderr}"
    );
    let grown = size_of(&log);
    assert!(grown > before || room == 0, "{round}: nothing was written");
    assert!(grown <= limit.div_ceil(ulimit_block()) * ulimit_block());
    check_jsonl(&log, &[], round);
    check_sessions(&ws, round, &no_temp);
}

/// A full disk (`ulimit -f`) while a run and a compaction append to the
/// log, the limit at seeded points of the new events: each fails
/// clearly, naming the log, and the session stays valid and resumes.
#[test]
fn a_full_disk_fails_the_log_write_clearly() {
    let mut seeded = Seeded::for_test("disk");
    // No room, part of the prompt, the prompt but part of the answer,
    // then seeded points inside the 60 KB answer.
    let mut rooms = vec![0, 40, 700];
    rooms.extend((0..3).map(|_| 1000 + seeded.below(58_000) as u64));
    for room in rooms {
        disk_full_round(
            room,
            false,
            &format!("a run with {room} bytes of room ({})", seed_note()),
        );
    }
    for room in [0, 20_000] {
        disk_full_round(
            room,
            true,
            &format!("a compaction with {room} bytes of room"),
        );
    }
}

/// Bug: after an append that the full disk cut short, a long-lived etch
/// (here `etch rpc`) appends its next events right after the fragment:
/// once there is room again (the limit raised with `prlimit`), the next
/// prompt's first event shares the fragment's line, which no loader can
/// read, so that prompt is lost from the log.
#[test]
fn after_a_full_disk_the_next_event_starts_a_line_of_its_own() {
    let ws = Workspace::new();
    let server = FakeServer::start(vec![Reply::sse(chat_text("second answer"))]).unwrap();
    let args = with_model(&server, &["rpc"]);
    // Room for the session's start, not for a 30 KB prompt.
    let mut rpc = Victim::start(limited(&ws, 4096, &args), Stdio::piped());
    let mut stdin = rpc.child.stdin.take().unwrap();
    let mut send = |command: Value| {
        use std::io::Write as _;
        writeln!(stdin, "{command}").unwrap();
    };
    let wait_for = |rpc: &Victim, text: &str, n: usize| {
        support::wait_until(text, || rpc.stdout().matches(text).count() >= n);
    };
    send(json!({"id": "1", "type": "prompt", "message": "a".repeat(30_000)}));
    wait_for(&rpc, "\"agent_end\"", 1);
    assert!(rpc.stdout().contains("File too large"), "{}", rpc.stdout());
    let raised = Command::new("prlimit")
        .args(["--pid", &rpc.pid().to_string(), "--fsize=unlimited"])
        .status()
        .unwrap();
    assert!(
        raised.success(),
        "prlimit (util-linux) could not raise the limit"
    );
    send(json!({"id": "2", "type": "prompt", "message": "a second prompt"}));
    wait_for(&rpc, "\"agent_end\"", 2);
    drop(rpc);
    let log = ws.only_session();
    let prompts: Vec<Value> = std::fs::read(&log)
        .unwrap()
        .split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
        .filter(|e| e["type"] == "message.user")
        .collect();
    assert!(
        prompts
            .iter()
            .any(|p| p["data"]["content"][0]["text"] == "a second prompt"),
        "the second prompt is not on a line of its own in {}",
        log.display()
    );
}
