// etcd, built from go.etcd.io/etcd/server/v3 at the version k8s.io/kubernetes pins, so the
// control plane runs the etcd its release is tested with (Debian's 3.4 is older).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
