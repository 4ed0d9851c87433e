//! `make run` as a user meets it (`e2e/scripts/run.sh`): an operator crash restarts the
//! operator, as its Deployment would, and leaves the control plane, the simulated nodes and
//! the jobs as they were; Ctrl-C (SIGINT to the foreground process group) stops everything,
//! also when it is pressed again while stopping.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kubetrain_e2e::repo_root;

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

fn read_pid(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn wait_for<T>(what: &str, limit: Duration, log: &Path, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "{what} within {limit:?}; run.sh said:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The kubetrain-operator binary next to this test's target directory, built if missing.
fn operator_binary() -> PathBuf {
    let simnodes = PathBuf::from(env!("CARGO_BIN_EXE_kubetrain-simnodes"));
    let dir = simnodes.parent().expect("target dir").to_path_buf();
    let operator = dir.join("kubetrain-operator");
    if !operator.exists() {
        let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args([
                "build",
                "-q",
                "-p",
                "kubetrain",
                "--bin",
                "kubetrain-operator",
            ])
            .current_dir(repo_root())
            .output()
            .expect("cargo runs");
        assert!(
            out.status.success(),
            "building the operator: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    dir
}

struct RunScript {
    child: Child,
    state: PathBuf,
    log: PathBuf,
}

impl Drop for RunScript {
    fn drop(&mut self) {
        // A failed assertion must not leave a control plane behind.
        let _ = Command::new("kill")
            .args(["-s", "TERM", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.state);
    }
}

#[test]
fn make_run_restarts_a_crashed_operator_and_stops_on_sigterm() {
    let bin = operator_binary();
    let state = std::env::temp_dir().join(format!("kubetrain-make-run-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&state);
    std::fs::create_dir_all(&state).expect("state dir");
    let log = state.join("run.log");
    // Through python3 only to give the script SIGINT's default disposition: a shell cannot
    // trap a signal that was ignored when it started, and the test may run in the
    // background of another shell (which ignores SIGINT for its background jobs), unlike a
    // user's terminal.
    let child = Command::new("python3")
        .args([
            "-c",
            "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); \
             os.execvp('bash', ['bash', sys.argv[1]])",
        ])
        .arg(repo_root().join("e2e/scripts/run.sh"))
        .env("KUBETRAIN_STATE", &state)
        .env("KUBETRAIN_BIN_DIR", &bin)
        .current_dir(repo_root())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).expect("log"))
        .stderr(std::fs::File::create(state.join("run.err")).expect("log"))
        // Its own process group, like a terminal's foreground job, so "Ctrl-C" reaches
        // exactly it.
        .process_group(0)
        .spawn()
        .expect("run.sh starts");
    let run = RunScript {
        child,
        state: state.clone(),
        log: state.join("run.err"),
    };
    let kubectl = |args: &[&str]| {
        let cache = kubetrain_e2e::cache_dir().expect("KUBETRAIN_CACHE or HOME");
        Command::new(cache.join("bin/kubectl"))
            .args(args)
            .env("KUBECONFIG", state.join("kubeconfig"))
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    };

    // Up: the samples run.
    let limit = Duration::from_secs(180);
    let first = wait_for("the operator starts", limit, &run.log, || {
        read_pid(&state.join("operator.pid"))
    });
    wait_for("a sample job runs", limit, &run.log, || {
        kubectl(&["get", "tj", "-A", "-o", "jsonpath={.items[*].status.phase}"])
            .filter(|p| p.split_whitespace().any(|p| p == "Running"))
    });
    let apiserver =
        read_pid(&state.join("kube-apiserver.pid")).expect("the control plane is running");
    // Logs written to files carry no colour escape codes.
    for file in [log.clone(), state.join("logs/simnodes.log")] {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(!text.is_empty(), "{} is empty", file.display());
        assert!(
            !text.contains('\u{1b}'),
            "{} has terminal escape codes",
            file.display()
        );
    }

    // The operator crashes: it comes back, the rest stays up and keeps working.
    assert!(
        Command::new("kill")
            .args(["-KILL", &first.to_string()])
            .status()
            .expect("kill runs")
            .success()
    );
    let second = wait_for(
        "the operator restarts",
        Duration::from_secs(60),
        &run.log,
        || read_pid(&state.join("operator.pid")).filter(|p| *p != first && alive(*p)),
    );
    assert!(
        alive(apiserver),
        "the control plane went down with the operator"
    );
    let nodes = kubectl(&["get", "nodes", "-o", "name"]).unwrap_or_default();
    assert!(!nodes.is_empty(), "the simulated nodes are gone");
    // The restarted operator schedules: the samples' reapplied jobs keep going, and a
    // job suspended and resumed runs again.
    wait_for(
        "the restarted operator writes status",
        Duration::from_secs(60),
        &run.log,
        || {
            kubectl(&[
                "get",
                "q",
                "-o",
                "jsonpath={.items[*].status.observedGeneration}",
            ])
            .filter(|g| !g.trim().is_empty())
        },
    );

    // SIGTERM to run.sh alone (`kill <run.pid>` from another shell) stops everything, as
    // Ctrl-C does through the same trap: it once waited for the operator, which never ended.
    let script = read_pid(&state.join("run.pid")).expect("run.pid");
    assert!(
        Command::new("kill")
            .args(["-s", "TERM", &script.to_string()])
            .status()
            .expect("kill runs")
            .success()
    );
    // Ctrl-C pressed again, twice, while it stops (SIGINT to the whole foreground group):
    // the teardown still stops everything and leaves no pid file behind.
    let controllers: Vec<u32> = ["etcd", "kube-controller-manager", "kube-scheduler"]
        .iter()
        .filter_map(|name| read_pid(&state.join(format!("{name}.pid"))))
        .collect();
    for _ in 0..2 {
        std::thread::sleep(Duration::from_millis(300));
        let _ = Command::new("kill")
            .args(["-s", "INT", "--", &format!("-{}", run.child.id())])
            .stderr(Stdio::null())
            .status();
    }
    let mut run = run;
    let exited = wait_for(
        "run.sh exits on SIGTERM",
        Duration::from_secs(60),
        &run.log,
        || run.child.try_wait().ok().flatten(),
    );
    assert!(
        !exited.success(),
        "run.sh reports the interrupt: {exited:?}"
    );
    for pid in [second, apiserver].into_iter().chain(controllers) {
        wait_for(
            &format!("process {pid} stops"),
            Duration::from_secs(30),
            &run.log,
            || (!alive(pid)).then_some(()),
        );
    }
    for name in [
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
    ] {
        let pid_file = state.join(format!("{name}.pid"));
        assert!(!pid_file.exists(), "{} is left behind", pid_file.display());
    }
}

/// Every e2e test binary starts its own control plane in a temp directory with
/// `--owner-pid`; when the binary exits, the watchdog must stop the processes *and* remove
/// the directory. It once killed itself first, and each `make test` left about 30 etcd data
/// directories (up to 800 MB each) behind until the disk filled.
#[test]
fn a_test_control_plane_and_its_directory_go_with_their_owner() {
    let dir = std::env::temp_dir().join(format!("kubetrain-owner-test-{}", std::process::id()));
    let mut owner = Command::new("sleep")
        .arg("600")
        .spawn()
        .expect("sleep starts");
    let out = Command::new("bash")
        .arg(repo_root().join("e2e/scripts/control-plane.sh"))
        .arg("up")
        .arg(&dir)
        .arg("--owner-pid")
        .arg(owner.id().to_string())
        .env_remove("KUBETRAIN_KEEP_STATE")
        .output()
        .expect("control-plane.sh runs");
    assert!(
        out.status.success(),
        "control-plane.sh up: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pids: Vec<u32> = ["etcd", "kube-apiserver", "watchdog"]
        .iter()
        .map(|name| read_pid(&dir.join(format!("{name}.pid"))).expect("pid file written"))
        .collect();
    assert!(pids.iter().all(|&pid| alive(pid)));

    owner.kill().expect("owner killed");
    owner.wait().expect("owner reaped");
    let log = dir.join("logs/etcd.log");
    wait_for(
        "the control plane stopped and its directory removed",
        Duration::from_secs(60),
        &log,
        || (!dir.exists() && pids.iter().all(|&pid| !alive(pid))).then_some(()),
    );
}
