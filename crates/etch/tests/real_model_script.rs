//! `scripts/real-model.sh`, the installer of the real-model test server
//! (issue 10), run for real against fake caches: the build flags chosen for
//! a CPU (never native, never AMX), the cache key that forces a rebuild
//! when the flags differ, and the smoke check failing on a server that
//! dies or never answers. None of this needs the model, so it always runs.

// Fixture helpers outside #[test] functions may panic on a broken setup.
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The script under test.
fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/real-model.sh")
}

/// Runs the script with `args`, the cache in `cache` and extra `env`.
fn run(cache: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new("bash");
    cmd.arg(script())
        .args(args)
        .env("ETCH_REAL_MODEL_DIR", cache);
    for (key, value) in env {
        cmd.env(key, value);
    }
    cmd.output().unwrap()
}

/// Stdout of a successful run.
fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A cpuinfo file whose first `flags` line lists `flags`.
fn cpuinfo(dir: &Path, name: &str, flags: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!("processor\t: 0\nmodel name\t: test\nflags\t\t: {flags}\n\nprocessor\t: 1\n"),
    )
    .unwrap();
    path
}

/// The value of `key: value` in the script's `status` output.
fn field(status: &str, key: &str) -> String {
    status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}: ")))
        .unwrap_or_default()
        .to_owned()
}

/// A CPU with AVX-512 and AMX gets a portable build: native off, AMX and
/// AVX-512 off, the AVX2 family on; a CPU without AVX2 gets no AVX2. (Only
/// on x86-64, where the flags are chosen at all.)
#[test]
#[cfg_attr(
    not(target_arch = "x86_64"),
    ignore = "the build flags are chosen on x86-64 only"
)]
fn flags_are_portable_and_follow_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let xeon = cpuinfo(
        dir.path(),
        "xeon",
        "fpu sse4_2 avx avx2 fma f16c bmi2 avx512f avx512_vnni amx_tile amx_int8 amx_bf16",
    );
    let flags = stdout(&run(
        dir.path(),
        &["flags"],
        &[("ETCH_REAL_MODEL_CPUINFO", xeon.to_str().unwrap())],
    ));
    for want in [
        "-DGGML_NATIVE=OFF",
        "-DGGML_AVX2=ON",
        "-DGGML_FMA=ON",
        "-DGGML_F16C=ON",
        "-DGGML_BMI2=ON",
        "-DGGML_AVX512=OFF",
        "-DGGML_AMX_TILE=OFF",
        "-DGGML_AMX_INT8=OFF",
        "-DGGML_AMX_BF16=OFF",
    ] {
        assert!(
            flags.split_whitespace().any(|f| f == want),
            "{want} in {flags}"
        );
    }
    let old = cpuinfo(dir.path(), "old", "fpu sse4_2 avx");
    let flags = stdout(&run(
        dir.path(),
        &["flags"],
        &[("ETCH_REAL_MODEL_CPUINFO", old.to_str().unwrap())],
    ));
    assert!(flags.contains("-DGGML_AVX=ON"), "{flags}");
    assert!(flags.contains("-DGGML_AVX2=OFF"), "{flags}");
    assert!(flags.contains("-DGGML_FMA=OFF"), "{flags}");
}

/// Puts an executable `llama-server` script (body `body`) and an empty
/// model file into the fake cache `cache`.
fn fake_install(cache: &Path, body: &str) {
    let bin = cache.join("build/llama-server/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let server = bin.join("llama-server");
    std::fs::write(&server, format!("#!/usr/bin/env bash\n{body}\n")).unwrap();
    std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(cache.join("models")).unwrap();
    std::fs::write(
        cache.join("models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
        "",
    )
    .unwrap();
}

/// The cache key: a server whose stamp matches this machine's flags is
/// used as it is; one built with another flag set (another CPU, or the old
/// native build) must be rebuilt, and `status` says why.
#[test]
fn a_changed_flag_set_forces_a_rebuild() {
    let cache = tempfile::tempdir().unwrap();
    let status = stdout(&run(cache.path(), &["status"], &[]));
    assert_eq!(
        field(&status, "server"),
        "needs a build: no server built yet"
    );
    fake_install(cache.path(), "exit 0");
    let stamp_path = cache.path().join("build/llama-server/.etch-stamp");
    let want = field(&status, "stamp");
    assert!(want.contains("flags=-DGGML_NATIVE=OFF"), "{want}");
    std::fs::write(&stamp_path, format!("{want}\n")).unwrap();
    let status = stdout(&run(cache.path(), &["status"], &[]));
    assert_eq!(field(&status, "server"), "built");
    std::fs::write(&stamp_path, "llama-cpp-python=0.3.36 native=ON\n").unwrap();
    let status = stdout(&run(cache.path(), &["status"], &[]));
    assert_eq!(
        field(&status, "server"),
        format!(
            "needs a build: built as 'llama-cpp-python=0.3.36 native=ON', this machine needs '{want}'"
        )
    );
    std::fs::remove_file(&stamp_path).unwrap();
    let status = stdout(&run(cache.path(), &["status"], &[]));
    assert!(
        field(&status, "server").starts_with("needs a build: built as 'unknown'"),
        "{status}"
    );
}

/// The smoke check fails, naming the step and showing the server's log,
/// when the server exits at once (as the AMX build did) and when it
/// listens but never answers; both within the configured wait.
#[test]
fn smoke_check_fails_on_a_server_that_does_not_answer() {
    let cache = tempfile::tempdir().unwrap();
    fake_install(
        cache.path(),
        "echo 'llama threadpool init, n_threads = 1'; echo 'general protection fault' >&2; exit 139",
    );
    let out = run(
        cache.path(),
        &["smoke"],
        &[("ETCH_REAL_MODEL_SMOKE_TIMEOUT", "20")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("smoke check failed at 'start the server': it exited with status 139"),
        "{stderr}"
    );
    assert!(stderr.contains("general protection fault"), "{stderr}");

    // Listens on the port it is given and never says a word.
    fake_install(
        cache.path(),
        r#"port=""; while [ $# -gt 0 ]; do [ "$1" = --port ] && port=$2; shift; done
exec python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
print("listening", flush=True)
conns = []
while True:
    c, _ = s.accept(); conns.append(c)' "$port""#,
    );
    let out = run(
        cache.path(),
        &["smoke"],
        &[("ETCH_REAL_MODEL_SMOKE_TIMEOUT", "5")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("smoke check failed at 'wait for /health': no answer within 5s"),
        "{stderr}"
    );
    assert!(stderr.contains("listening"), "{stderr}");
}

/// A server that answers passes the smoke check, also on a machine whose
/// `http_proxy` points nowhere: the check talks to loopback directly.
#[test]
fn smoke_check_passes_on_an_answering_server_despite_a_proxy() {
    let cache = tempfile::tempdir().unwrap();
    fake_install(
        cache.path(),
        r#"port=""; while [ $# -gt 0 ]; do [ "$1" = --port ] && port=$2; shift; done
exec python3 -c 'import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def reply(self, body):
        data = json.dumps(body).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
    def do_GET(self): self.reply({"status": "ok"})
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.reply({"choices": [{"message": {"role": "assistant", "content": "hi"}}]})
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()' "$port""#,
    );
    let out = run(
        cache.path(),
        &["smoke"],
        &[
            ("ETCH_REAL_MODEL_SMOKE_TIMEOUT", "30"),
            ("http_proxy", "http://127.0.0.1:1"),
            ("HTTP_PROXY", "http://127.0.0.1:1"),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("smoke check passed"), "{stderr}");
}

/// A timeout that is not a number is refused before anything starts.
#[test]
fn smoke_timeout_must_be_a_number() {
    let cache = tempfile::tempdir().unwrap();
    fake_install(cache.path(), "exit 0");
    let out = run(
        cache.path(),
        &["smoke"],
        &[("ETCH_REAL_MODEL_SMOKE_TIMEOUT", "soon")],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("must be a number of seconds"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
