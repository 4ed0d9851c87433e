//! The container of a GPU reservation pod (`kubetrain-operator reserve-gpu`).
//!
//! The operator keeps one reservation pod per shared GPU on nodes where a device plugin hands
//! out GPUs (`api::annotations::RESERVATION_LABEL`). The pod requests `nvidia.com/gpu: 1`;
//! the plugin picks the device and tells the container which one, in `NVIDIA_VISIBLE_DEVICES`
//! (its `envvar` device-list strategy) or as one entry per device under
//! `/var/run/nvidia-container-devices` (its `volume-mounts` strategy, where the variable names
//! that directory). The container reads it, writes it on its own pod as
//! [`RESERVED_DEVICE_ANNOTATION`] (the operator then ungates the GPU's share pods with that
//! device) and holds the GPU until it is stopped.
//!
//! It needs `POD_NAME` and `POD_NAMESPACE` (downward API), and RBAC leave to `patch` its
//! own pod.
//! Any failure ends it with a non-zero status and the reason, so the pod restarts and
//! `kubectl logs` says why.

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use tracing::info;

use crate::api::annotations::RESERVED_DEVICE_ANNOTATION;

/// Where the device plugin's `volume-mounts` strategy lists the devices: one entry per
/// device, named by the device id.
pub const DEVICE_LIST_DIR: &str = "/var/run/nvidia-container-devices";
/// The variable the device plugin sets.
pub const VISIBLE_DEVICES_ENV: &str = "NVIDIA_VISIBLE_DEVICES";
/// Field manager of the annotation write.
pub const FIELD_MANAGER: &str = "kubetrain-gpu-reservation";

/// Why the reservation could not report its device.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `NVIDIA_VISIBLE_DEVICES` names no device.
    #[error(
        "{VISIBLE_DEVICES_ENV} is {0:?}: the device plugin gave this container no device; \
         the reservation pod must request nvidia.com/gpu: 1"
    )]
    NoDevice(String),
    /// Neither the variable nor the device-list directory names a device.
    #[error(
        "{VISIBLE_DEVICES_ENV} is {env} and {} lists no device: the device plugin gave this \
         container no device; the reservation pod must request nvidia.com/gpu: 1",
        dir.display()
    )]
    NoDeviceListed {
        /// How the variable was set (`unset`, or its value quoted).
        env: String,
        /// The device-list directory.
        dir: PathBuf,
    },
    /// More than one device where a reservation holds exactly one.
    #[error(
        "the device plugin gave this container {} devices ({}); a reservation pod must \
         request nvidia.com/gpu: 1",
        .0.len(),
        .0.join(",")
    )]
    TooMany(Vec<String>),
    /// The device-list directory exists but cannot be read.
    #[error("reading the device list {}: {source}", dir.display())]
    DeviceList {
        /// The device-list directory.
        dir: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A variable the pod must set through the downward API is missing.
    #[error(
        "{0} is not set: the reservation container needs it from the downward API \
         (fieldRef metadata.{1})"
    )]
    MissingEnv(&'static str, &'static str),
    /// Writing the annotation failed.
    #[error(
        "writing {RESERVED_DEVICE_ANNOTATION} on pod {namespace}/{name}: {}",
        api_message(error)
    )]
    Patch {
        /// The pod's namespace.
        namespace: String,
        /// The pod's name.
        name: String,
        /// The API error.
        error: kube::Error,
    },
    /// The termination signals could not be watched.
    #[error("watching for SIGTERM: {0}")]
    Signal(std::io::Error),
}

/// The API server's own message for an API error (kube's also prints the whole Status).
fn api_message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => format!("{} ({})", status.message, status.code),
        e => e.to_string(),
    }
}

/// The device the device plugin gave the container, from the value of
/// `NVIDIA_VISIBLE_DEVICES` (`None`: unset) and, when that is unset, `/dev/null` or the
/// directory itself, the entries of the device-list directory `list_dir`. Exactly one device
/// is accepted; `void`, `none`, `all` and an empty value name no device.
pub fn device(visible: Option<&str>, list_dir: &Path) -> Result<String, Error> {
    let value = visible.map(str::trim);
    let listed = |v: &str| v == "/dev/null" || Path::new(v) == list_dir;
    match value {
        Some(v) if !listed(v) => {
            if ["", "void", "none", "all"]
                .iter()
                .any(|no| v.eq_ignore_ascii_case(no))
            {
                return Err(Error::NoDevice(v.to_string()));
            }
            let devices: Vec<String> = v
                .split(',')
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .map(str::to_string)
                .collect();
            one(devices)
        }
        _ => {
            let env = value.map_or_else(|| "unset".to_string(), |v| format!("{v:?}"));
            let entries = match std::fs::read_dir(list_dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(Error::NoDeviceListed {
                        env,
                        dir: list_dir.into(),
                    });
                }
                Err(source) => {
                    return Err(Error::DeviceList {
                        dir: list_dir.into(),
                        source,
                    });
                }
            };
            let mut devices = Vec::new();
            for entry in entries {
                let entry = entry.map_err(|source| Error::DeviceList {
                    dir: list_dir.into(),
                    source,
                })?;
                let name = entry.file_name().to_string_lossy().into_owned();
                if !name.starts_with('.') {
                    devices.push(name);
                }
            }
            devices.sort();
            if devices.is_empty() {
                return Err(Error::NoDeviceListed {
                    env,
                    dir: list_dir.into(),
                });
            }
            one(devices)
        }
    }
}

fn one(mut devices: Vec<String>) -> Result<String, Error> {
    match devices.len() {
        1 => Ok(devices.remove(0)),
        0 => Err(Error::NoDevice(String::new())),
        _ => Err(Error::TooMany(devices)),
    }
}

/// The pod's name and namespace from `POD_NAME` and `POD_NAMESPACE`, read through `var`.
fn pod_identity(var: impl Fn(&str) -> Option<String>) -> Result<(String, String), Error> {
    let get = |key: &'static str, field: &'static str| {
        var(key)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .ok_or(Error::MissingEnv(key, field))
    };
    Ok((get("POD_NAME", "name")?, get("POD_NAMESPACE", "namespace")?))
}

fn env(key: &str) -> Option<String> {
    std::env::var_os(key).map(|v| v.to_string_lossy().into_owned())
}

/// A reservation container's pod and the device it was given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reservation {
    /// The pod's name.
    pub name: String,
    /// The pod's namespace.
    pub namespace: String,
    /// The device the device plugin gave the container.
    pub device: String,
}

impl Reservation {
    /// The pod (`POD_NAME`, `POD_NAMESPACE`) and its device (`NVIDIA_VISIBLE_DEVICES`, else
    /// [`DEVICE_LIST_DIR`]) from the container's environment.
    pub fn from_env() -> Result<Reservation, Error> {
        let (name, namespace) = pod_identity(env)?;
        let device = device(
            env(VISIBLE_DEVICES_ENV).as_deref(),
            Path::new(DEVICE_LIST_DIR),
        )?;
        Ok(Reservation {
            name,
            namespace,
            device,
        })
    }

    /// Writes the device on the pod's [`RESERVED_DEVICE_ANNOTATION`], then holds it until
    /// SIGTERM or Ctrl-C.
    pub async fn hold(self, client: Client) -> Result<(), Error> {
        // Watch for SIGTERM first: as PID 1 of its container, the process would otherwise
        // ignore it, and the pod would take its whole grace period to stop.
        let stop = stopped()?;
        let Reservation {
            name,
            namespace,
            device,
        } = self;
        let pods: Api<Pod> = Api::namespaced(client, &namespace);
        let patch =
            json!({ "metadata": { "annotations": { RESERVED_DEVICE_ANNOTATION: &device } } });
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..PatchParams::default()
        };
        pods.patch(&name, &params, &Patch::Merge(patch))
            .await
            .map_err(|error| Error::Patch {
                namespace: namespace.clone(),
                name: name.clone(),
                error,
            })?;
        info!(pod = %name, %namespace, %device, "GPU reserved; holding it until stopped");
        let signal = stop.await.map_err(Error::Signal)?;
        info!(%signal, "stopping; the GPU is released");
        Ok(())
    }
}

/// Reads the reservation from the environment ([`Reservation::from_env`]) and holds it
/// ([`Reservation::hold`]).
pub async fn run(client: Client) -> Result<(), Error> {
    Reservation::from_env()?.hold(client).await
}

/// Resolves with the signal's name at SIGTERM or Ctrl-C; the handlers are installed at once.
fn stopped() -> Result<impl Future<Output = std::io::Result<&'static str>>, Error> {
    #[cfg(unix)]
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(Error::Signal)?;
    Ok(async move {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = term.recv() => Ok("SIGTERM"),
                r = tokio::signal::ctrl_c() => r.map(|()| "SIGINT"),
            }
        }
        #[cfg(not(unix))]
        {
            tokio::signal::ctrl_c().await.map(|()| "Ctrl-C")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory under the system's temporary directory, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> TempDir {
            let dir = std::env::temp_dir().join(format!(
                "kubetrain-reservation-{name}-{}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("temp dir");
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn missing() -> PathBuf {
        std::env::temp_dir().join("kubetrain-reservation-no-such-dir")
    }

    #[test]
    fn the_variable_names_the_device() {
        let dir = missing();
        let uuid = "GPU-8f1e2c3a-0000-1111-2222-333344445555";
        assert_eq!(device(Some(uuid), &dir).unwrap(), uuid);
        assert_eq!(device(Some(&format!("  {uuid}\n")), &dir).unwrap(), uuid);
        assert_eq!(device(Some("3"), &dir).unwrap(), "3", "an index");
    }

    #[test]
    fn no_device_is_an_error_that_says_what_to_request() {
        let dir = missing();
        for value in ["", "  ", "void", "none", "all", "ALL", "Void"] {
            let e = device(Some(value), &dir).unwrap_err();
            assert!(matches!(e, Error::NoDevice(_)), "{value:?}: {e:?}");
            let message = e.to_string();
            assert!(message.contains("no device"), "{message}");
            assert!(message.contains("nvidia.com/gpu: 1"), "{message}");
        }
        let e = device(Some("GPU-a,GPU-b"), &dir).unwrap_err();
        assert!(matches!(&e, Error::TooMany(d) if d.len() == 2), "{e:?}");
        assert!(e.to_string().contains("GPU-a,GPU-b"), "{e}");
    }

    #[test]
    fn without_the_variable_the_device_list_directory_names_it() {
        let dir = TempDir::new("list");
        std::fs::write(dir.0.join("GPU-1234"), "").unwrap();
        for value in [None, Some("/dev/null"), Some(dir.0.to_str().unwrap())] {
            assert_eq!(device(value, &dir.0).unwrap(), "GPU-1234", "{value:?}");
        }
        std::fs::write(dir.0.join("GPU-5678"), "").unwrap();
        let e = device(None, &dir.0).unwrap_err();
        assert!(
            matches!(&e, Error::TooMany(d) if d == &["GPU-1234", "GPU-5678"]),
            "{e:?}"
        );
    }

    #[test]
    fn an_empty_or_missing_device_list_is_no_device() {
        let empty = TempDir::new("empty");
        for dir in [&empty.0, &missing()] {
            for value in [None, Some("/dev/null")] {
                let e = device(value, dir).unwrap_err();
                assert!(matches!(e, Error::NoDeviceListed { .. }), "{e:?}");
                let message = e.to_string();
                assert!(message.contains(&*dir.to_string_lossy()), "{message}");
                assert!(message.contains("nvidia.com/gpu: 1"), "{message}");
            }
        }
        let e = device(None, &missing()).unwrap_err().to_string();
        assert!(e.contains("NVIDIA_VISIBLE_DEVICES is unset"), "{e}");
    }

    #[test]
    fn pod_identity_names_the_missing_variable() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            pod_identity(vars(&[("POD_NAME", "r-0"), ("POD_NAMESPACE", "ns")])).unwrap(),
            ("r-0".to_string(), "ns".to_string())
        );
        let e = pod_identity(vars(&[("POD_NAMESPACE", "ns")])).unwrap_err();
        assert!(e.to_string().starts_with("POD_NAME is not set"), "{e}");
        let e = pod_identity(vars(&[("POD_NAME", "r-0"), ("POD_NAMESPACE", " ")])).unwrap_err();
        assert!(e.to_string().starts_with("POD_NAMESPACE is not set"), "{e}");
    }
}
