// Command etcd is etcd's own server (go.etcd.io/etcd/server/v3/etcdmain), pinned by this folder's go.mod.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
