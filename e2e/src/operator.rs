//! The operator, run inside the test process on its own thread and runtime, against the
//! test control plane. Stopping it drops its runtime at once — every task ends mid-flight,
//! without releasing its lease — which is what a crash looks like to the API server.

use std::sync::OnceLock;
use std::time::Duration;

use kubetrain::controller::context::Settings;
use kubetrain::controller::leader::LeaderSettings;
use kubetrain::controller::pods::Binding;
use kubetrain::controller::{self, Config};

use crate::ControlPlane;

/// A running operator.
pub struct Operator {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Settings for tests: quick resync, the workload history saved every second, no HTTP
/// endpoint; the binding mode of
/// `KUBETRAIN_BINDING` (`scheduler`, the default, or `direct`), as the operator's flag reads
/// it, so the benchmarks can measure both.
pub fn test_config(identity: &str) -> Config {
    let mut settings = Settings {
        resync: Duration::from_secs(1),
        debounce: Duration::from_millis(50),
        incomplete_gang_timeout: Duration::from_secs(5),
        ..Settings::default()
    };
    settings.workload.save_interval = Duration::from_secs(1);
    settings.pods.binding = binding();
    Config {
        settings,
        leader: LeaderSettings {
            namespace: crate::control_plane::OPERATOR_NAMESPACE.into(),
            name: "kubetrain-operator".into(),
            identity: identity.into(),
            duration: Duration::from_secs(6),
            renew_deadline: Duration::from_secs(4),
            retry: Duration::from_secs(1),
        },
        http: None,
    }
}

/// The binding mode the tests run the operator with.
pub fn binding() -> Binding {
    match std::env::var("KUBETRAIN_BINDING").as_deref() {
        Ok("direct") => Binding::Direct,
        _ => Binding::Scheduler,
    }
}

impl Operator {
    /// Starts an operator with `config` against `cp`.
    pub fn start(cp: &'static ControlPlane, config: Config) -> Operator {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => panic!("operator runtime: {e}"),
            };
            rt.block_on(async move {
                let client = match cp.operator_client().await {
                    Ok(c) => c,
                    Err(e) => panic!("operator client: {e}"),
                };
                tokio::select! {
                    r = controller::run(client, config) => {
                        if let Err(e) = r { eprintln!("operator stopped: {e}"); }
                    }
                    _ = rx => {}
                }
            });
            rt.shutdown_background();
        });
        Operator {
            stop: Some(tx),
            thread: Some(thread),
        }
    }

    /// The operator of this test binary, started on first use.
    pub fn shared() -> &'static Operator {
        static SHARED: OnceLock<Operator> = OnceLock::new();
        SHARED
            .get_or_init(|| Operator::start(ControlPlane::shared(), test_config("kubetrain-test")))
    }

    /// Stops it abruptly, like a crash.
    pub fn kill(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        self.halt();
    }
}
